package moe.a2a.bench;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.kernels.DType;
import moe.a2a.workload.BenchRouting;
import moe.a2a.workload.BenchWorkload;

/**
 * One rank's part of the transport benchmark: the exchanges of a workload's dispatch and combine as
 * the communicator sees them. Dispatch is the counts exchange plus the rows (each token once to
 * every rank hosting one of its experts, packed per destination in token order); combine sends one
 * row per received token back. Rows are packed before timing and not reduced after: this measures
 * the transport, not pack, unpack or reduction. Every received row is checked against its source
 * token once. Runs on the rank's thread.
 */
public final class TransportBench {

    private TransportBench() {}

    public static RankTimes run(
            BenchWorkload w, Communicator comm, int[][] rows, int warmup, int iters) {
        final int n = w.worldSize();
        final int me = comm.rank();
        final int rowBytes = w.rowBytes();
        long[] sendRows = new long[n];
        long[] recvRows = new long[n];
        long[] sendBytes = new long[n];
        long[] recvBytes = new long[n];
        long totalSend = 0;
        long totalRecv = 0;
        for (int p = 0; p < n; p++) {
            sendRows[p] = rows[me][p];
            sendBytes[p] = (long) rows[me][p] * rowBytes;
            recvBytes[p] = (long) rows[p][me] * rowBytes;
            totalSend += sendBytes[p];
            totalRecv += recvBytes[p];
        }
        ByteBuffer send = pack(w, me, totalSend);
        ByteBuffer recv = ByteBuffer.allocateDirect((int) totalRecv).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer back = ByteBuffer.allocateDirect((int) totalSend).order(ByteOrder.LITTLE_ENDIAN);
        long[] dispatchNs = new long[iters];
        long[] combineNs = new long[iters];
        boolean ok = true;
        for (int i = 0; i < warmup + iters; i++) {
            comm.barrier();
            long t0 = System.nanoTime();
            comm.allToAllCounts(i, ExchangePhase.DISPATCH, sendRows, recvRows);
            comm.allToAllV(i, ExchangePhase.DISPATCH, send, sendBytes, recv, recvBytes);
            long t1 = System.nanoTime();
            comm.allToAllV(i, ExchangePhase.COMBINE, recv, recvBytes, back, sendBytes);
            long t2 = System.nanoTime();
            if (i == 0) {
                ok = received(w, me, recv) && back.equals(send) && countsMatch(recvRows, rows, me);
            }
            if (i >= warmup) {
                dispatchNs[i - warmup] = t1 - t0;
                combineNs[i - warmup] = t2 - t1;
            }
        }
        return new RankTimes(dispatchNs, combineNs, RankTimes.barriers(comm, iters), ok);
    }

    /** Source {@code src}'s rows, packed per destination rank in token order. */
    static ByteBuffer pack(BenchWorkload w, int src, long bytes) {
        ByteBuffer out = ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.LITTLE_ENDIAN);
        int[] ids = BenchRouting.topkIds(w, src);
        int at = 0;
        for (int dst = 0; dst < w.worldSize(); dst++) {
            for (int t = 0; t < w.tokens(); t++) {
                if (hits(w, ids, t, dst)) {
                    for (int c = 0; c < w.hidden(); c++) {
                        DType.BF16.put(out, at + 2 * c, BenchRouting.payload(src, t, c));
                    }
                    at += w.rowBytes();
                }
            }
        }
        return out;
    }

    /** Whether every row in {@code recv} is the expected token of its source, in order. */
    private static boolean received(BenchWorkload w, int me, ByteBuffer recv) {
        int at = 0;
        for (int src = 0; src < w.worldSize(); src++) {
            int[] ids = BenchRouting.topkIds(w, src);
            for (int t = 0; t < w.tokens(); t++) {
                if (hits(w, ids, t, me)) {
                    for (int c = 0; c < w.hidden(); c++) {
                        if (DType.BF16.get(recv, at + 2 * c)
                                != DType.BF16.round(BenchRouting.payload(src, t, c))) {
                            return false;
                        }
                    }
                    at += w.rowBytes();
                }
            }
        }
        return true;
    }

    private static boolean countsMatch(long[] recvRows, int[][] rows, int me) {
        for (int src = 0; src < recvRows.length; src++) {
            if (recvRows[src] != rows[src][me]) {
                return false;
            }
        }
        return true;
    }

    static boolean hits(BenchWorkload w, int[] ids, int token, int rank) {
        for (int j = 0; j < w.topK(); j++) {
            if (w.rankOf(ids[token * w.topK() + j]) == rank) {
                return true;
            }
        }
        return false;
    }
}
