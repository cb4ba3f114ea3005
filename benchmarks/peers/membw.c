/* membw.c: memcpy bandwidth on buffers far beyond the caches, with 1 thread and with one thread
 * per online core; the copy bound of the peer comparison divides the exchanged bytes by the
 * latter. Each thread copies its own src -> dst pair; a repetition's rate is the bytes all
 * threads copied over the slowest thread's time. The best repetition is reported, as moe-a2a's
 * bench does: a floor must not count the time other tenants took (GB/s = 1e9 bytes copied per
 * second; memory traffic is twice that: read + write).
 *
 * build: gcc -O2 -pthread -o membw membw.c
 * usage: ./membw [MiB per thread, default 256] [repetitions, default 5]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_REPS 64

typedef struct {
  size_t bytes;
  int reps;
  pthread_barrier_t *start, *stop;
  double seconds[MAX_REPS];
} job_t;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void *copier(void *arg) {
  job_t *j = arg;
  /* Allocated and faulted in by the copying thread, so its pages are local to it. */
  char *src = malloc(j->bytes), *dst = malloc(j->bytes);
  if (!src || !dst) { perror("malloc"); exit(1); }
  memset(src, 1, j->bytes);
  memset(dst, 2, j->bytes);
  for (int r = 0; r < j->reps; r++) {
    pthread_barrier_wait(j->start);
    double t0 = now();
    memcpy(dst, src, j->bytes);
    j->seconds[r] = now() - t0;
    pthread_barrier_wait(j->stop);
  }
  free(src);
  free(dst);
  return NULL;
}

static double gbps(int threads, size_t bytes, int reps) {
  pthread_t *tid = malloc(sizeof(pthread_t) * threads);
  job_t *jobs = calloc(threads, sizeof(job_t));
  pthread_barrier_t start, stop;
  pthread_barrier_init(&start, NULL, threads);
  pthread_barrier_init(&stop, NULL, threads);
  for (int i = 0; i < threads; i++) {
    jobs[i] = (job_t){.bytes = bytes, .reps = reps, .start = &start, .stop = &stop};
    pthread_create(&tid[i], NULL, copier, &jobs[i]);
  }
  for (int i = 0; i < threads; i++) pthread_join(tid[i], NULL);
  double best = 0;
  for (int r = 0; r < reps; r++) {
    double slowest = 0;
    for (int i = 0; i < threads; i++) if (jobs[i].seconds[r] > slowest) slowest = jobs[i].seconds[r];
    double rate = (double)threads * (double)bytes / slowest / 1e9;
    if (rate > best) best = rate;
  }
  pthread_barrier_destroy(&start);
  pthread_barrier_destroy(&stop);
  free(tid);
  free(jobs);
  return best;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  if (mib < 1 || reps < 1 || reps > MAX_REPS) {
    fprintf(stderr, "usage: membw [MiB per thread >= 1] [repetitions 1..%d]\n", MAX_REPS);
    return 2;
  }
  int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (cores < 1) cores = 1;
  double one = gbps(1, mib << 20, reps), all = gbps(cores, mib << 20, reps);
  printf("RESULT {\"memcpy_gbps_1t\":%.2f,\"memcpy_gbps\":%.2f,\"threads\":%d,\"mib_per_thread\":%zu,\"reps\":%d,\"stat\":\"best\"}\n",
         one, all, cores, mib, reps);
  return 0;
}
