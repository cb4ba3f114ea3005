package moe.a2a.comm.shm;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.CollectiveAlgo;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;

/**
 * One rank of {@link ShmProcessTest}, as its own process: {@code <dir> <groupId> <rank> <size>
 * <mode>}. Joins the group, runs an all-to-all-v and an all-reduce and checks them against a
 * reference it computes itself, prints {@code READY rank=<r>}; mode {@code check} then closes and
 * exits 0, mode {@code loop} keeps running all-reduces until one fails, prints {@code FAILED
 * rank=<r>: <message>} and exits 3. Any other failure exits 1.
 */
public final class ShmChild {
    static final long TIMEOUT_NS = TimeUnit.SECONDS.toNanos(20);
    static final long HEARTBEAT_TIMEOUT_NS = TimeUnit.SECONDS.toNanos(1);
    private static final int ELEMENTS = 100_003;

    private ShmChild() {}

    public static void main(String[] args) {
        Path dir = Path.of(args[0]);
        long groupId = Long.parseLong(args[1]);
        int rank = Integer.parseInt(args[2]);
        int size = Integer.parseInt(args[3]);
        boolean loop = args[4].equals("loop");
        ShmConfig config =
                new ShmConfig(
                        rank,
                        size,
                        groupId,
                        dir,
                        TIMEOUT_NS,
                        HEARTBEAT_TIMEOUT_NS,
                        ShmConfig.DEFAULT_INITIAL_REGION_BYTES);
        System.exit(run(config, loop));
    }

    private static int run(ShmConfig config, boolean loop) {
        ShmCommunicator comm = null;
        try {
            comm = ShmCommunicator.open(config);
            allToAllV(comm);
            allReduce(comm);
            System.out.println("READY rank=" + config.rank());
            if (!loop) {
                return 0;
            }
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            try {
                while (System.nanoTime() < until) {
                    allReduce(comm);
                    comm.barrier();
                }
            } catch (A2aException e) {
                System.out.println("FAILED rank=" + config.rank() + ": " + e.getMessage());
                return 3;
            }
            System.out.println("NO FAILURE rank=" + config.rank());
            return 4;
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            return 1;
        } finally {
            if (comm != null) {
                comm.close();
            }
            System.out.flush();
        }
    }

    /** Bytes from src to dst: some over a third of a megabyte, so regions must grow. */
    static long bytes(int src, int dst) {
        return 150_000L * (1 + (src + 2 * dst) % 3) + 7L * src + dst;
    }

    static byte pattern(int src, int dst, long i) {
        return (byte) (src * 31 + dst * 17 + i * 7 + (i >>> 9));
    }

    private static void allToAllV(ShmCommunicator comm) {
        int n = comm.size();
        int r = comm.rank();
        long[] send = new long[n];
        long[] recv = new long[n];
        long total = 0;
        for (int d = 0; d < n; d++) {
            send[d] = bytes(r, d);
            total += send[d];
        }
        comm.allToAllCounts(0, ExchangePhase.DISPATCH, send, recv);
        long recvTotal = 0;
        for (int s = 0; s < n; s++) {
            check(recv[s] == bytes(s, r), "count from " + s + ": " + recv[s]);
            recvTotal += recv[s];
        }
        ByteBuffer out = ByteBuffer.allocateDirect((int) total);
        long at = 0;
        for (int d = 0; d < n; d++) {
            for (long i = 0; i < send[d]; i++) {
                out.put((int) (at + i), pattern(r, d, i));
            }
            at += send[d];
        }
        ByteBuffer in = ByteBuffer.allocateDirect((int) recvTotal);
        comm.allToAllV(0, ExchangePhase.DISPATCH, out, send, in, recv);
        at = 0;
        for (int s = 0; s < n; s++) {
            for (long i = 0; i < recv[s]; i++) {
                check(in.get((int) (at + i)) == pattern(s, r, i), "byte " + i + " from " + s);
            }
            at += recv[s];
        }
    }

    private static void allReduce(ShmCommunicator comm) {
        int n = comm.size();
        float[] mine = new float[ELEMENTS];
        float[] expected = new float[ELEMENTS];
        for (int i = 0; i < ELEMENTS; i++) {
            mine[i] = input(comm.rank(), i);
            for (int s = 0; s < n; s++) {
                expected[i] += input(s, i);
            }
        }
        ByteBuffer buf =
                ByteBuffer.allocateDirect(ELEMENTS * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        DType.FP32.encode(mine, 0, ELEMENTS, buf, 0);
        comm.allReduce(buf, buf, ELEMENTS, DType.FP32, ReduceOp.SUM, CollectiveAlgo.RING);
        float[] got = new float[ELEMENTS];
        DType.FP32.decode(buf, 0, got, 0, ELEMENTS);
        for (int i = 0; i < ELEMENTS; i++) {
            check(got[i] == expected[i], "all-reduce element " + i + ": " + got[i]);
        }
    }

    private static float input(int rank, int i) {
        return (rank * 31 + i) % 17 - 8;
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError("rank check failed: " + what);
        }
    }
}
