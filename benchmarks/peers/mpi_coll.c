/* mpi_coll.c -- Open MPI's collectives timed as nccl-tests times them, the peer of `moe-a2a bench --collective`.
 * usage: mpirun -np N mpi_coll -c allreduce|allgather|reducescatter|broadcast|alltoall -b BYTES [-w WARM] [-i ITERS] [-p LABEL]
 * BYTES is nccl-tests' "size" (as moe-a2a's --bytes): allreduce, broadcast: the buffer; allgather: the gathered output
 * (N x input); reducescatter: the input (N x output); alltoall: the send buffer. float32, sum, broadcast root 0.
 * It is cut to whole floats, and for allgather, reducescatter and alltoall to a multiple of N floats (at least N).
 * Prints one line `RESULT {json}` with moe-a2a's row fields: collective, transport (LABEL), ranks, bytes, dtype,
 * time_us_p50 (median over ITERS of the slowest rank; of an even count, the mean of the middle two), algbw_gbs,
 * busbw_gbs (x 2(N-1)/N for allreduce; (N-1)/N for allgather, reducescatter, alltoall; 1 for broadcast), wrong
 * (wrong elements of the last result against the closed form of the inputs, summed over ranks). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const char *coll = "allreduce", *label = "mpi";
  long bytes = 1 << 26;
  int warm = 5, iters = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-c")) coll = argv[i + 1];
    else if (!strcmp(argv[i], "-b")) bytes = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "-w")) warm = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-i")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-p")) label = argv[i + 1];
  }
  int blocked = !strcmp(coll, "allgather") || !strcmp(coll, "reducescatter") || !strcmp(coll, "alltoall");
  long count = bytes / 4;
  if (blocked) { count -= count % n; if (count < n) count = n; }
  else if (count < 1) count = 1;
  long chunk = blocked ? count / n : count;
  float *in = malloc(count * 4), *out = malloc(count * 4);
  for (long j = 0; j < count; j++) in[j] = (float)((rank + 1) * ((j % 7) + 1));
  memset(out, 0, count * 4);
  double factor = !strcmp(coll, "allreduce") ? 2.0 * (n - 1) / n : !strcmp(coll, "broadcast") ? 1.0 : (double)(n - 1) / n;
  double *t = malloc(sizeof(double) * iters);
  for (int it = -warm; it < iters; it++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (!strcmp(coll, "allreduce")) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(coll, "allgather")) MPI_Allgather(in, chunk, MPI_FLOAT, out, chunk, MPI_FLOAT, MPI_COMM_WORLD);
    else if (!strcmp(coll, "reducescatter")) MPI_Reduce_scatter_block(in, out, chunk, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(coll, "broadcast")) { if (rank == 0) memcpy(out, in, count * 4); MPI_Bcast(out, count, MPI_FLOAT, 0, MPI_COMM_WORLD); }
    else if (!strcmp(coll, "alltoall")) MPI_Alltoall(in, chunk, MPI_FLOAT, out, chunk, MPI_FLOAT, MPI_COMM_WORLD);
    else { if (rank == 0) fprintf(stderr, "mpi_coll: unknown collective %s\n", coll); MPI_Abort(MPI_COMM_WORLD, 2); }
    double dt = MPI_Wtime() - t0, mx;
    MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (it >= 0) t[it] = mx;
  }
  /* the last result against the closed form: rank r's input j is (r + 1)(j mod 7 + 1) */
  long wrong = 0;
  double sumr = n * (n + 1) / 2.0;
  if (!strcmp(coll, "allreduce")) { for (long j = 0; j < count; j++) wrong += out[j] != (float)(sumr * ((j % 7) + 1)); }
  else if (!strcmp(coll, "allgather")) { for (long j = 0; j < count; j++) { long r = j / chunk, k = j % chunk; wrong += out[j] != (float)((r + 1) * ((k % 7) + 1)); } }
  else if (!strcmp(coll, "reducescatter")) { for (long k = 0; k < chunk; k++) { long j = rank * chunk + k; wrong += out[k] != (float)(sumr * ((j % 7) + 1)); } }
  else if (!strcmp(coll, "broadcast")) { for (long j = 0; j < count; j++) wrong += out[j] != (float)((j % 7) + 1); }
  else if (!strcmp(coll, "alltoall")) { for (long j = 0; j < count; j++) { long r = j / chunk, k = rank * chunk + j % chunk; wrong += out[j] != (float)((r + 1) * ((k % 7) + 1)); } }
  long allwrong;
  MPI_Allreduce(&wrong, &allwrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    qsort(t, iters, sizeof(double), cmp);
    double med = iters % 2 ? t[iters / 2] : (t[iters / 2 - 1] + t[iters / 2]) / 2, algbw = count * 4.0 / med / 1e9;
    printf("RESULT {\"collective\":\"%s\",\"transport\":\"%s\",\"ranks\":%d,\"bytes\":%ld,\"dtype\":\"fp32\",\"algo\":\"mpi\","
           "\"time_us_p50\":%.3f,\"algbw_gbs\":%.3f,\"busbw_gbs\":%.3f,\"wrong\":%ld}\n",
           coll, label, n, count * 4, med * 1e6, algbw, algbw * factor, allwrong);
  }
  MPI_Finalize();
  return 0;
}
