package moe.a2a.gpu;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.IntFunction;
import moe.a2a.comm.CollectiveAlgo;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.nccl.NcclCommunicator;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;

/**
 * {@link GpuCheck}'s NCCL collectives: all-reduce (every element type and reduction),
 * reduce-scatter, all-gather, broadcast, equal-split all-to-all and point-to-point on a group of
 * real NCCL ranks, each rank on its own thread, against a plain reference. Inputs are small
 * integers, so every sum is exact in every element type and any order of reduction must give the
 * reference's bits. With one GPU the group has one rank: every call still runs through NCCL.
 */
final class NcclCollectivesCheck {
    /** Elements per all-reduce: not a multiple of any world size, large enough for NCCL's rings. */
    private static final int COUNT = (1 << 20) + 3;

    private NcclCollectivesCheck() {}

    static void run(NcclCommunicator[] group, CheckTable table) {
        final int n = group.length;
        String ranks = " (" + n + (n == 1 ? " rank)" : " ranks)");
        SplittableRandom random = new SplittableRandom(4242 + n);
        try {
            int combos = 0;
            List<String> wrong = new ArrayList<>();
            for (DType dtype : DType.values()) {
                for (ReduceOp op : ReduceOp.values()) {
                    float[][] in = inputs(random, n, COUNT);
                    float[] expected = reduce(in, op, 0, COUNT);
                    List<float[]> outs =
                            onRanks(
                                    n,
                                    r -> {
                                        ByteBuffer send = encode(dtype, in[r]);
                                        ByteBuffer recv = direct(send.capacity());
                                        group[r].allReduce(
                                                send, recv, COUNT, dtype, op, CollectiveAlgo.AUTO);
                                        return decode(dtype, recv, 0, COUNT);
                                    });
                    for (int r = 0; r < n; r++) {
                        if (!Arrays.equals(outs.get(r), expected)) {
                            wrong.add(dtype + "/" + op + " rank " + r);
                        }
                    }
                    combos++;
                }
            }
            table.row(
                    "nccl allReduce" + ranks,
                    wrong.isEmpty()
                            ? combos + " dtype x op, " + COUNT + " elements: as the reference"
                            : "differs from the reference: " + wrong,
                    wrong.isEmpty());

            int perRank = COUNT / 4;
            float[][] in = inputs(random, n, n * perRank);
            List<float[]> scattered =
                    onRanks(
                            n,
                            r -> {
                                ByteBuffer recv = direct((long) perRank * Short.BYTES);
                                group[r].reduceScatter(
                                        encode(DType.BF16, in[r]),
                                        recv,
                                        perRank,
                                        DType.BF16,
                                        ReduceOp.SUM);
                                return decode(DType.BF16, recv, 0, perRank);
                            });
            boolean ok = true;
            for (int r = 0; r < n; r++) {
                ok &=
                        Arrays.equals(
                                scattered.get(r), reduce(in, ReduceOp.SUM, r * perRank, perRank));
            }
            table.row("nccl reduceScatter bf16 sum" + ranks, perRank + " elements per rank", ok);

            int block = 1 << 20;
            byte[][] blocks = new byte[n][block];
            for (byte[] b : blocks) {
                random.nextBytes(b);
            }
            List<byte[]> gathered =
                    onRanks(
                            n,
                            r -> {
                                ByteBuffer recv = direct((long) n * block);
                                group[r].allGather(direct(block).put(0, blocks[r]), recv, block);
                                return bytes(recv, n * block);
                            });
            byte[] all = new byte[n * block];
            for (int r = 0; r < n; r++) {
                System.arraycopy(blocks[r], 0, all, r * block, block);
            }
            table.row(
                    "nccl allGather" + ranks,
                    block + " bytes per rank",
                    gathered.stream().allMatch(g -> Arrays.equals(g, all)));

            int root = n - 1;
            byte[] payload = new byte[(3 << 20) + 5];
            random.nextBytes(payload);
            List<byte[]> broadcast =
                    onRanks(
                            n,
                            r -> {
                                ByteBuffer buf = direct(payload.length);
                                if (r == root) {
                                    buf.put(0, payload);
                                }
                                group[r].broadcast(buf, payload.length, root, CollectiveAlgo.AUTO);
                                return bytes(buf, payload.length);
                            });
            table.row(
                    "nccl broadcast" + ranks,
                    payload.length + " bytes from rank " + root,
                    broadcast.stream().allMatch(b -> Arrays.equals(b, payload)));

            int perPeer = 1 << 16;
            byte[][] sends = new byte[n][n * perPeer];
            for (byte[] s : sends) {
                random.nextBytes(s);
            }
            List<byte[]> exchanged =
                    onRanks(
                            n,
                            r -> {
                                ByteBuffer recv = direct((long) n * perPeer);
                                group[r].allToAll(
                                        direct((long) n * perPeer).put(0, sends[r]), recv, perPeer);
                                return bytes(recv, n * perPeer);
                            });
            ok = true;
            for (int r = 0; r < n; r++) {
                for (int src = 0; src < n; src++) {
                    ok &=
                            Arrays.equals(
                                    exchanged.get(r),
                                    src * perPeer,
                                    (src + 1) * perPeer,
                                    sends[src],
                                    r * perPeer,
                                    (r + 1) * perPeer);
                }
            }
            table.row("nccl allToAll (grouped send/recv)" + ranks, perPeer + " bytes per peer", ok);

            // a ring: every rank sends to the next and receives from the previous (itself at 1)
            int message = 100_003;
            byte[][] messages = new byte[n][message];
            for (byte[] m : messages) {
                random.nextBytes(m);
            }
            List<byte[]> got =
                    onRanks(
                            n,
                            r -> {
                                ByteBuffer recv = direct(message);
                                group[r].sendRecv(
                                        (r + 1) % n,
                                        direct(message).put(0, messages[r]),
                                        0,
                                        message,
                                        (r + n - 1) % n,
                                        message,
                                        (src, o, b) -> recv.put(0, src, o, b));
                                return bytes(recv, message);
                            });
            ok = true;
            for (int r = 0; r < n; r++) {
                ok &= Arrays.equals(got.get(r), messages[(r + n - 1) % n]);
            }
            table.row("nccl sendRecv ring" + ranks, message + " bytes", ok);
        } catch (RuntimeException e) {
            e.printStackTrace(System.err);
            table.row("nccl collectives" + ranks, "failed: " + e, false);
        }
    }

    /** Runs {@code task} for every rank at once, each on its own thread (NCCL ranks must meet). */
    static <T> List<T> onRanks(int n, IntFunction<T> task) {
        if (n == 1) {
            return List.of(task.apply(0));
        }
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<T>> futures = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                final int rank = r;
                futures.add(pool.submit(() -> task.apply(rank)));
            }
            List<T> results = new ArrayList<>();
            for (Future<T> f : futures) {
                results.add(f.get());
            }
            return results;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException cause) {
                throw cause;
            }
            throw new IllegalStateException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } finally {
            pool.shutdownNow();
        }
    }

    /** Closes every rank of {@code group}. */
    static void close(Communicator[] group) {
        for (Communicator c : group) {
            if (c != null) {
                c.close();
            }
        }
    }

    private static float[][] inputs(SplittableRandom random, int n, int count) {
        float[][] inputs = new float[n][count];
        for (float[] in : inputs) {
            for (int i = 0; i < count; i++) {
                in[i] = random.nextInt(-8, 9);
            }
        }
        return inputs;
    }

    private static float[] reduce(float[][] inputs, ReduceOp op, int from, int count) {
        float[] out = new float[count];
        for (int i = 0; i < count; i++) {
            float acc = inputs[0][from + i];
            for (int r = 1; r < inputs.length; r++) {
                acc = op.apply(acc, inputs[r][from + i]);
            }
            out[i] = acc;
        }
        return out;
    }

    private static ByteBuffer encode(DType dtype, float[] values) {
        ByteBuffer buf = direct((long) values.length * dtype.sizeBytes());
        dtype.encode(values, 0, values.length, buf, 0);
        return buf;
    }

    private static float[] decode(DType dtype, ByteBuffer buf, int at, int count) {
        float[] out = new float[count];
        dtype.decode(buf, at, out, 0, count);
        return out;
    }

    private static byte[] bytes(ByteBuffer buf, int length) {
        byte[] out = new byte[length];
        buf.get(0, out);
        return out;
    }

    private static ByteBuffer direct(long bytes) {
        return ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.LITTLE_ENDIAN);
    }
}
