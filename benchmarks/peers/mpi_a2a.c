/* mpi_a2a.c: Open MPI peer for the canonical MoE exchange workloads (docs: README.md here).
 *
 * dispatch = per-destination counts from the routing + pack (one row per token and destination
 *            rank, dedup) + MPI_Alltoall(counts) + MPI_Alltoallv(bf16 rows)
 * combine  = MPI_Alltoallv(rows back) + weighted fp32 reduce into T x H outputs
 *
 * A validation round runs first, untimed: received rows are compared with the source's token
 * rows, an "expert" scales them by (rank + 1), and the combined output is checked. Then warm-up
 * and measured rounds: barrier, then each phase timed on every rank; per round the max over
 * ranks; median and p90 over the measured rounds. Rank 0 prints one `RESULT {json}` line.
 *
 * build: mpicc -O3 -march=native -o mpi_a2a mpi_a2a.c -lm
 * run:   mpirun -np 4 ./mpi_a2a -T 2048 -H 7168 -K 8 -E 256 -s 0 -P 0 -S 42 -w 3 -i 40 -n prefill -p mpi
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  int N, T, H, K, E, perm, warmup, iters;
  double zipf;
  uint64_t seed;
  const char *name, *peer;
} cfg_t;

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* Popularity index -> cumulative probability, and index -> expert. */
static void zipf_table(const cfg_t *c, double *cdf, int *perm) {
  double sum = 0, run = 0;
  for (int i = 0; i < c->E; i++) sum += pow(i + 1.0, -c->zipf);
  for (int i = 0; i < c->E; i++) { run += pow(i + 1.0, -c->zipf); cdf[i] = run / sum; }
  cdf[c->E - 1] = 1.0;
  for (int i = 0; i < c->E; i++) perm[i] = i;
  if (!c->perm) return;
  uint64_t st = c->seed ^ 0xD1B54A32D192ED03ULL;
  for (int i = c->E - 1; i > 0; i--) {
    int j = (int)(splitmix64(&st) % (uint64_t)(i + 1)), tmp = perm[i];
    perm[i] = perm[j]; perm[j] = tmp;
  }
}

/* Experts[t*K + k] of source rank r. */
static void route(const cfg_t *c, int r, const double *cdf, const int *perm, int *experts) {
  uint64_t tmp = c->seed ^ (0xA0761D6478BD642FULL * (uint64_t)(r + 1));
  uint64_t st = splitmix64(&tmp);
  for (int t = 0; t < c->T; t++) {
    int *ex = experts + (size_t)t * c->K;
    for (int k = 0; k < c->K; k++) {
      int e, seen;
      do {
        if (c->zipf == 0) {
          e = (int)(splitmix64(&st) % (uint64_t)c->E);
        } else {
          double u = (double)(splitmix64(&st) >> 11) * 0x1.0p-53;
          int lo = 0, hi = c->E - 1; /* smallest i with cdf[i] > u; cdf[E-1] = 1 > u */
          while (lo < hi) { int mid = (lo + hi) / 2; if (cdf[mid] > u) hi = mid; else lo = mid + 1; }
          e = perm[lo];
        }
        seen = 0;
        for (int j = 0; j < k; j++) seen |= ex[j] == e;
      } while (seen);
      ex[k] = e;
    }
  }
}

/* Payload values are integers below 32, so bf16 truncation of the fp32 bits is exact. */
static inline float value(int src, int t, int col) { return (float)((src * 131 + t * 7 + col * 3) % 32); }
static inline uint16_t to_bf16(float f) { uint32_t u; memcpy(&u, &f, 4); return (uint16_t)(u >> 16); }
static inline float from_bf16(uint16_t b) { uint32_t u = (uint32_t)b << 16; float f; memcpy(&f, &u, 4); return f; }

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
/* Median (mean of the middle two for even n) and nearest-rank p90; sorts v. */
static void summarize(double *v, int n, double *p50, double *p90) {
  qsort(v, n, sizeof *v, cmp_double);
  *p50 = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  int i = (int)ceil(0.9 * n) - 1;
  *p90 = v[i < 0 ? 0 : i];
}

static void usage_exit(int me) {
  if (me == 0)
    fprintf(stderr, "usage: mpi_a2a [-T tokens] [-H hidden] [-K topk] [-E experts] [-s zipf] [-P 0|1] "
                    "[-S seed] [-w warmup] [-i iters] [-n name] [-p peer-label]  (E %% ranks == 0, K <= E, i >= 1)\n");
  MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int me, N;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &N);
  cfg_t c = {N, 2048, 7168, 8, 256, 0, 3, 40, 0.0, 42, "custom", "mpi"};
  for (int o; (o = getopt(argc, argv, "T:H:K:E:s:P:S:w:i:n:p:")) != -1;) {
    switch (o) {
      case 'T': c.T = atoi(optarg); break;
      case 'H': c.H = atoi(optarg); break;
      case 'K': c.K = atoi(optarg); break;
      case 'E': c.E = atoi(optarg); break;
      case 's': c.zipf = atof(optarg); break;
      case 'P': c.perm = atoi(optarg); break;
      case 'S': c.seed = strtoull(optarg, NULL, 10); break;
      case 'w': c.warmup = atoi(optarg); break;
      case 'i': c.iters = atoi(optarg); break;
      case 'n': c.name = optarg; break;
      case 'p': c.peer = optarg; break;
      default: usage_exit(me);
    }
  }
  if (c.E % N || c.K > c.E || c.K > 255 || c.T < 1 || c.warmup < 0 || c.iters < 1) usage_exit(me);
  const int T = c.T, H = c.H, K = c.K, per_rank = c.E / N;
  const size_t row_bytes = 2 * (size_t)H;

  /* Every rank routes every source: the expected received rows and the fingerprint need them. */
  double *cdf = malloc(sizeof(double) * c.E);
  int *perm = malloc(sizeof(int) * c.E);
  zipf_table(&c, cdf, perm);
  int *experts = malloc(sizeof(int) * (size_t)N * T * K);
  for (int r = 0; r < N; r++) route(&c, r, cdf, perm, experts + (size_t)r * T * K);
  const int *my_experts = experts + (size_t)me * T * K;

  /* rows[s][d]: tokens of s with at least one expert on d; sizes every buffer exactly. */
  int *rows = calloc((size_t)N * N, sizeof(int));
  for (int s = 0; s < N; s++)
    for (int t = 0; t < T; t++) {
      unsigned char hit[N];
      memset(hit, 0, N);
      for (int k = 0; k < K; k++) hit[experts[((size_t)s * T + t) * K + k] / per_rank] = 1;
      for (int d = 0; d < N; d++) rows[s * N + d] += hit[d];
    }
  size_t send_rows = 0, recv_rows = 0;
  for (int d = 0; d < N; d++) { send_rows += rows[me * N + d]; recv_rows += rows[d * N + me]; }

  uint16_t *x = malloc(row_bytes * T);
  for (int t = 0; t < T; t++)
    for (int j = 0; j < H; j++) x[(size_t)t * H + j] = to_bf16(value(me, t, j));
  /* calloc may map lazily; memset faults the pages in before any timed round. */
  uint16_t *sbuf = malloc(row_bytes * send_rows), *rbuf = malloc(row_bytes * recv_rows),
           *cbuf = malloc(row_bytes * send_rows);
  memset(sbuf, 0, row_bytes * send_rows); memset(rbuf, 0, row_bytes * recv_rows); memset(cbuf, 0, row_bytes * send_rows);
  float *out = malloc(sizeof(float) * (size_t)T * H);
  memset(out, 0, sizeof(float) * (size_t)T * H);
  unsigned char *hits = malloc((size_t)T * N); /* m_td: experts of token t on rank d */
  int *at = malloc(sizeof(int) * (size_t)T * N); /* row index of (t, d) in sbuf and cbuf */
  int *scnt = calloc(N, sizeof(int)), *rcnt = calloc(N, sizeof(int)), *sdisp = calloc(N, sizeof(int)),
      *rdisp = calloc(N, sizeof(int)), *cursor = calloc(N, sizeof(int));
  MPI_Datatype row;
  MPI_Type_contiguous((int)row_bytes, MPI_BYTE, &row);
  MPI_Type_commit(&row);

  const int rounds = 1 + c.warmup + c.iters; /* round 0 validates */
  double *mine = calloc((size_t)rounds * 2, sizeof(double)), *slowest = calloc((size_t)rounds * 2, sizeof(double));
  int ok = 1;
  for (int it = 0; it < rounds; it++) {
    const int validate = it == 0;

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    memset(hits, 0, (size_t)T * N);
    memset(scnt, 0, sizeof(int) * N);
    for (int t = 0; t < T; t++)
      for (int k = 0; k < K; k++) hits[(size_t)t * N + my_experts[t * K + k] / per_rank]++;
    for (int t = 0; t < T; t++)
      for (int d = 0; d < N; d++) scnt[d] += hits[(size_t)t * N + d] != 0;
    for (int d = 0; d < N; d++) cursor[d] = sdisp[d] = d ? sdisp[d - 1] + scnt[d - 1] : 0;
    for (int t = 0; t < T; t++)
      for (int d = 0; d < N; d++)
        if (hits[(size_t)t * N + d]) {
          int slot = cursor[d]++;
          at[(size_t)t * N + d] = slot;
          memcpy(sbuf + (size_t)slot * H, x + (size_t)t * H, row_bytes);
        }
    MPI_Alltoall(scnt, 1, MPI_INT, rcnt, 1, MPI_INT, MPI_COMM_WORLD);
    for (int d = 0; d < N; d++) rdisp[d] = d ? rdisp[d - 1] + rcnt[d - 1] : 0;
    MPI_Alltoallv(sbuf, scnt, sdisp, row, rbuf, rcnt, rdisp, row, MPI_COMM_WORLD);
    double t1 = MPI_Wtime();

    if (validate) {
      for (int s = 0; s < N; s++) {
        if (rcnt[s] != rows[s * N + me]) { ok = 0; continue; }
        const uint16_t *got = rbuf + (size_t)rdisp[s] * H;
        for (int t = 0; t < T; t++) {
          int hit = 0;
          for (int k = 0; k < K; k++) hit |= experts[((size_t)s * T + t) * K + k] / per_rank == me;
          if (!hit) continue;
          for (int j = 0; j < H; j++) ok &= got[j] == to_bf16(value(s, t, j));
          got += H;
        }
      }
      for (size_t i = 0; i < recv_rows * H; i++) rbuf[i] = to_bf16(from_bf16(rbuf[i]) * (float)(me + 1));
    }

    MPI_Barrier(MPI_COMM_WORLD);
    double t2 = MPI_Wtime();
    MPI_Alltoallv(rbuf, rcnt, rdisp, row, cbuf, scnt, sdisp, row, MPI_COMM_WORLD);
    for (int t = 0; t < T; t++) {
      float *o = out + (size_t)t * H;
      int first = 1;
      for (int d = 0; d < N; d++) {
        int m = hits[(size_t)t * N + d];
        if (!m) continue;
        const float w = (float)m / (float)K;
        const uint16_t *r = cbuf + (size_t)at[(size_t)t * N + d] * H;
        if (first) for (int j = 0; j < H; j++) o[j] = w * from_bf16(r[j]);
        else       for (int j = 0; j < H; j++) o[j] += w * from_bf16(r[j]);
        first = 0;
      }
    }
    double t3 = MPI_Wtime();

    if (validate) {
      for (int t = 0; t < T; t++) {
        float f = 0;
        for (int d = 0; d < N; d++) f += (float)hits[(size_t)t * N + d] * (float)(d + 1) / (float)K;
        for (int j = 0; j < H; j++) {
          float want = value(me, t, j) * f, got = out[(size_t)t * H + j];
          ok &= fabsf(got - want) <= 1e-4f * (1.0f + fabsf(want));
        }
      }
    }
    mine[2 * it] = t1 - t0;
    mine[2 * it + 1] = t3 - t2;
  }
  MPI_Reduce(mine, slowest, rounds * 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  int all_ok;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);

  if (me == 0) {
    const int n = c.iters;
    double *v = malloc(sizeof(double) * n), p50[3], p90[3];
    for (int q = 0; q < 3; q++) { /* dispatch, combine, total */
      for (int i = 0; i < n; i++) {
        const double *r = slowest + 2 * (size_t)(1 + c.warmup + i);
        v[i] = 1e6 * (q == 0 ? r[0] : q == 1 ? r[1] : r[0] + r[1]);
      }
      summarize(v, n, &p50[q], &p90[q]);
    }
    uint64_t fp = 0xcbf29ce484222325ULL, remote = 0;
    for (int s = 0; s < N; s++)
      for (int d = 0; d < N; d++) {
        uint32_t cnt = (uint32_t)rows[s * N + d];
        for (int b = 0; b < 4; b++) { fp ^= (cnt >> (8 * b)) & 0xff; fp *= 0x100000001b3ULL; }
        if (s != d) remote += cnt;
      }
    const uint64_t bytes_per_rank = remote * row_bytes / (uint64_t)N;
    const double algbw = 2.0 * (double)bytes_per_rank / (p50[2] * 1e3);
    char routing[64];
    if (c.zipf == 0) snprintf(routing, sizeof routing, "uniform");
    else snprintf(routing, sizeof routing, "zipf s=%.1f%s", c.zipf, c.perm ? " perm" : "");
    printf("RESULT {\"workload\":\"%s\",\"transport\":\"%s\",\"N\":%d,\"T\":%d,\"H\":%d,\"K\":%d,\"E\":%d,"
           "\"routing\":\"%s\",\"fingerprint\":\"%016llx\",\"bytes_per_rank\":%llu,"
           "\"dispatch_us_p50\":%.1f,\"dispatch_us_p90\":%.1f,\"combine_us_p50\":%.1f,\"combine_us_p90\":%.1f,"
           "\"total_us_p50\":%.1f,\"total_us_p90\":%.1f,\"algbw_gbps\":%.3f,\"agg_gbps\":%.3f,"
           "\"warmup\":%d,\"iters\":%d,\"ok\":%s}\n",
           c.name, c.peer, N, T, H, K, c.E, routing, (unsigned long long)fp, (unsigned long long)bytes_per_rank,
           p50[0], p90[0], p50[1], p90[1], p50[2], p90[2], algbw, N * algbw, c.warmup, c.iters,
           all_ok ? "true" : "false");
    fflush(stdout);
  }
  MPI_Type_free(&row);
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
