package moe.a2a.comm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The collectives and point-to-point contract every {@link Communicator} transport must meet,
 * against a plain single-process reference. Inputs are seeded random small integers, so every sum
 * is exact in every dtype and any order of reduction gives the reference's bits.
 */
@Timeout(120)
public abstract class AbstractCollectivesTest {
    private static final long TIMEOUT_NS = TimeUnit.SECONDS.toNanos(20);

    /** A fresh group of {@code size} ranks whose collectives time out after {@code timeoutNs}. */
    protected abstract Communicator[] newGroup(int size, long timeoutNs) throws Exception;

    /** Whether a timeout names the missing peer (a transport that cannot tell overrides this). */
    protected boolean namesMissingPeer() {
        return true;
    }

    /**
     * Whether one rank's abort reaches the others before their deadline; where it does not (NCCL's
     * abort is local to the rank), they must still fail, at their deadline.
     */
    protected boolean propagatesAbort() {
        return true;
    }

    /** Element counts: empty, one, fewer than the ranks, not divisible by them, large. */
    private static int[] counts(int n) {
        return new int[] {0, 1, Math.max(1, n - 1), 1000 * n + 3, 70_001};
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4, 5, 8})
    void shouldAllReduceLikeTheReferenceForEveryDtypeOpAndAlgorithm(int n) throws Exception {
        Communicator[] group = newGroup(n, TIMEOUT_NS);
        SplittableRandom random = new SplittableRandom(7000 + n);
        for (CollectiveAlgo algo : CollectiveAlgo.values()) {
            for (DType dtype : DType.values()) {
                for (ReduceOp op : ReduceOp.values()) {
                    for (int count : counts(n)) {
                        float[][] inputs = inputs(random, n, count);
                        float[] expected = reduce(inputs, op, 0, count);
                        boolean inPlace = random.nextBoolean();
                        String what =
                                String.format(
                                        java.util.Locale.ROOT,
                                        "n=%d algo=%s dtype=%s op=%s count=%d inPlace=%b",
                                        n,
                                        algo,
                                        dtype,
                                        op,
                                        count,
                                        inPlace);
                        List<float[]> outs =
                                RankThreads.run(
                                        n,
                                        r -> {
                                            ByteBuffer send = encode(dtype, inputs[r]);
                                            ByteBuffer recv =
                                                    inPlace ? send : direct(send.capacity());
                                            group[r].allReduce(send, recv, count, dtype, op, algo);
                                            return decode(dtype, recv, 0, count);
                                        });
                        for (int r = 0; r < n; r++) {
                            assertThat(outs.get(r)).as(what + " rank=" + r).isEqualTo(expected);
                        }
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4, 8})
    void shouldAllGatherEveryRanksBlockInRankOrder(int n) throws Exception {
        Communicator[] group = newGroup(n, TIMEOUT_NS);
        SplittableRandom random = new SplittableRandom(8000 + n);
        for (int bytes : new int[] {0, 1, 7, 4093, 300_000}) {
            byte[][] blocks = new byte[n][bytes];
            for (byte[] b : blocks) {
                random.nextBytes(b);
            }
            List<byte[]> outs =
                    RankThreads.run(
                            n,
                            r -> {
                                ByteBuffer send = direct(bytes).put(0, blocks[r]);
                                ByteBuffer recv = direct(n * bytes);
                                group[r].allGather(send, recv, bytes);
                                return bytes(recv, 0, n * bytes);
                            });
            for (int r = 0; r < n; r++) {
                for (int src = 0; src < n; src++) {
                    assertThat(
                                    java.util.Arrays.copyOfRange(
                                            outs.get(r), src * bytes, (src + 1) * bytes))
                            .as("n=%d bytes=%d rank=%d block=%d", n, bytes, r, src)
                            .isEqualTo(blocks[src]);
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4, 8})
    void shouldReduceScatterEachRanksBlock(int n) throws Exception {
        Communicator[] group = newGroup(n, TIMEOUT_NS);
        SplittableRandom random = new SplittableRandom(9000 + n);
        for (DType dtype : DType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                for (int perRank : new int[] {0, 1, 333, 40_000}) {
                    float[][] inputs = inputs(random, n, n * perRank);
                    List<float[]> outs =
                            RankThreads.run(
                                    n,
                                    r -> {
                                        ByteBuffer send = encode(dtype, inputs[r]);
                                        ByteBuffer recv = direct(perRank * dtype.sizeBytes());
                                        group[r].reduceScatter(send, recv, perRank, dtype, op);
                                        return decode(dtype, recv, 0, perRank);
                                    });
                    for (int r = 0; r < n; r++) {
                        assertThat(outs.get(r))
                                .as(
                                        "n=%d dtype=%s op=%s perRank=%d rank=%d",
                                        n, dtype, op, perRank, r)
                                .isEqualTo(reduce(inputs, op, r * perRank, perRank));
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4, 5, 8})
    void shouldBroadcastFromEveryRootWithEveryAlgorithm(int n) throws Exception {
        Communicator[] group = newGroup(n, TIMEOUT_NS);
        SplittableRandom random = new SplittableRandom(10_000 + n);
        for (CollectiveAlgo algo : CollectiveAlgo.values()) {
            for (int bytes : new int[] {0, 1, 1001, (3 << 20) + 5}) {
                for (int root = 0; root < n; root++) {
                    byte[] payload = new byte[bytes];
                    random.nextBytes(payload);
                    final int from = root;
                    List<byte[]> outs =
                            RankThreads.run(
                                    n,
                                    r -> {
                                        ByteBuffer buf = direct(bytes);
                                        if (r == from) {
                                            buf.put(0, payload);
                                        }
                                        group[r].broadcast(buf, bytes, from, algo);
                                        return bytes(buf, 0, bytes);
                                    });
                    for (int r = 0; r < n; r++) {
                        assertThat(outs.get(r))
                                .as(
                                        "n=%d algo=%s bytes=%d root=%d rank=%d",
                                        n, algo, bytes, root, r)
                                .isEqualTo(payload);
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4, 8})
    void shouldAllToAllEqualBlocks(int n) throws Exception {
        Communicator[] group = newGroup(n, TIMEOUT_NS);
        SplittableRandom random = new SplittableRandom(11_000 + n);
        for (int bytes : new int[] {0, 1, 999, 65_536}) {
            byte[][] sends = new byte[n][n * bytes];
            for (byte[] s : sends) {
                random.nextBytes(s);
            }
            List<byte[]> outs =
                    RankThreads.run(
                            n,
                            r -> {
                                ByteBuffer recv = direct(n * bytes);
                                group[r].allToAll(direct(n * bytes).put(0, sends[r]), recv, bytes);
                                return bytes(recv, 0, n * bytes);
                            });
            for (int r = 0; r < n; r++) {
                for (int src = 0; src < n; src++) {
                    assertThat(
                                    java.util.Arrays.copyOfRange(
                                            outs.get(r), src * bytes, (src + 1) * bytes))
                            .as("n=%d bytes=%d rank=%d src=%d", n, bytes, r, src)
                            .isEqualTo(
                                    java.util.Arrays.copyOfRange(
                                            sends[src], r * bytes, (r + 1) * bytes));
                }
            }
        }
    }

    /** Every rank sends several messages to every other, each pair's arriving in the order sent. */
    @ParameterizedTest
    @ValueSource(ints = {2, 3, 4})
    void shouldDeliverPointToPointMessagesInOrderPerPair(int n) throws Exception {
        Communicator[] group = newGroup(n, TIMEOUT_NS);
        final int messages = 3;
        List<List<String>> received =
                RankThreads.run(
                        n,
                        r -> {
                            List<String> got = new ArrayList<>();
                            // round d: send to r + d, receive from r - d, so no rank waits on
                            // itself
                            for (int d = 1; d < n; d++) {
                                int to = (r + d) % n;
                                int from = (r - d + n) % n;
                                for (int m = 0; m < messages; m++) {
                                    byte[] out = message(r, to, m);
                                    ByteBuffer send = direct(out.length).put(0, out);
                                    int expect = message(from, r, m).length;
                                    ByteBuffer recv = direct(expect);
                                    group[r].sendRecv(
                                            to,
                                            send,
                                            0,
                                            out.length,
                                            from,
                                            expect,
                                            (src, o, b) -> recv.put(0, src, o, b));
                                    got.add(
                                            new String(
                                                    bytes(recv, 0, expect),
                                                    java.nio.charset.StandardCharsets.UTF_8));
                                }
                            }
                            // and plain send then recv between ranks 0 and 1
                            if (r == 0) {
                                byte[] hello =
                                        "hello 1".getBytes(java.nio.charset.StandardCharsets.UTF_8);
                                group[r].send(
                                        1, direct(hello.length).put(0, hello), 0, hello.length);
                            } else if (r == 1) {
                                ByteBuffer buf = direct(7);
                                group[r].recv(0, buf, 0, 7);
                                got.add(
                                        new String(
                                                bytes(buf, 0, 7),
                                                java.nio.charset.StandardCharsets.UTF_8));
                            }
                            return got;
                        });
        for (int r = 0; r < n; r++) {
            List<String> expected = new ArrayList<>();
            for (int d = 1; d < n; d++) {
                for (int m = 0; m < messages; m++) {
                    expected.add(
                            new String(
                                    message((r - d + n) % n, r, m),
                                    java.nio.charset.StandardCharsets.UTF_8));
                }
            }
            if (r == 1) {
                expected.add("hello 1");
            }
            assertThat(received.get(r)).as("rank %d", r).isEqualTo(expected);
        }
    }

    @Test
    void shouldFailNamingThePeerWhenAMessageHasAnotherLength() throws Exception {
        Communicator[] group = newGroup(2, TIMEOUT_NS);
        List<Throwable> failures =
                RankThreads.run(
                        2,
                        r -> {
                            try {
                                if (r == 0) {
                                    group[0].send(1, direct(16), 0, 16);
                                    // a send may return once written (TCP): the sender learns of
                                    // the receiver's failure at its next call at the latest
                                    group[0].barrier();
                                } else {
                                    group[1].recv(0, direct(12), 0, 12);
                                }
                                return null;
                            } catch (A2aException e) {
                                return e;
                            }
                        });
        assertThat(failures.get(1)).isInstanceOf(A2aException.class);
        assertThat(failures.get(1).getMessage()).contains("16").contains("12");
        assertThat(failures.get(0))
                .as("the sender learns of it too")
                .isInstanceOf(A2aException.class);
    }

    @Test
    void shouldTimeOutNamingTheMissingPeerWhenARankNeverJoinsAnAllReduce() throws Exception {
        Communicator[] group = newGroup(3, TimeUnit.MILLISECONDS.toNanos(800));
        List<Throwable> failures =
                RankThreads.run(
                        3,
                        r -> {
                            if (r == 2) {
                                return null; // never arrives
                            }
                            ByteBuffer buf = direct(4 * 1000);
                            try {
                                group[r].allReduce(
                                        buf,
                                        buf,
                                        1000,
                                        DType.FP32,
                                        ReduceOp.SUM,
                                        CollectiveAlgo.RING);
                                return null;
                            } catch (A2aException e) {
                                return e;
                            }
                        });
        assertThat(failures.get(0)).isInstanceOf(A2aException.class);
        assertThat(failures.get(1)).isInstanceOf(A2aException.class);
        if (namesMissingPeer()) {
            assertThat(failures.get(0).getMessage() + failures.get(1).getMessage())
                    .contains("peer=2");
        }
    }

    @Test
    void shouldFailEveryRankWhenOneAbortsMidCollective() throws Exception {
        long timeoutNs = propagatesAbort() ? TIMEOUT_NS : TimeUnit.MILLISECONDS.toNanos(800);
        Communicator[] group = newGroup(3, timeoutNs);
        long start = System.nanoTime();
        List<Throwable> failures =
                RankThreads.run(
                        3,
                        r -> {
                            if (r == 2) {
                                group[2].abort(new A2aException("rank 2 gave up"));
                                return null;
                            }
                            ByteBuffer buf = direct(4 * 100_000);
                            try {
                                group[r].allReduce(
                                        buf,
                                        buf,
                                        100_000,
                                        DType.FP32,
                                        ReduceOp.SUM,
                                        CollectiveAlgo.RING);
                                return null;
                            } catch (A2aException e) {
                                return e;
                            }
                        });
        assertThat(failures.get(0)).isInstanceOf(A2aException.class);
        assertThat(failures.get(1)).isInstanceOf(A2aException.class);
        if (propagatesAbort()) {
            assertThat(System.nanoTime() - start)
                    .as("long before the timeout")
                    .isLessThan(TIMEOUT_NS / 2);
        }
    }

    @Test
    void shouldRejectBadArgumentsNamingTheField() throws Exception {
        Communicator comm = newGroup(1, TIMEOUT_NS)[0];
        ByteBuffer small = direct(8);
        assertThatThrownBy(
                        () ->
                                comm.allReduce(
                                        small,
                                        small,
                                        3,
                                        DType.FP32,
                                        ReduceOp.SUM,
                                        CollectiveAlgo.AUTO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("send.capacity");
        assertThatThrownBy(
                        () ->
                                comm.allReduce(
                                        small,
                                        small,
                                        -1,
                                        DType.FP32,
                                        ReduceOp.SUM,
                                        CollectiveAlgo.AUTO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("count");
        assertThatThrownBy(() -> comm.broadcast(small, 8, 1, CollectiveAlgo.AUTO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("root");
        assertThatThrownBy(() -> comm.allGather(small, direct(4), 8))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("recv.capacity");
    }

    private static byte[] message(int src, int dst, int m) {
        return ("from " + src + " to " + dst + " #" + m + "!".repeat(src + m))
                .getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    /** {@code n} ranks' inputs of {@code count} small integers, exact in every dtype. */
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
        ByteBuffer buf = direct(values.length * dtype.sizeBytes());
        dtype.encode(values, 0, values.length, buf, 0);
        return buf;
    }

    private static float[] decode(DType dtype, ByteBuffer buf, int at, int count) {
        float[] out = new float[count];
        dtype.decode(buf, at, out, 0, count);
        return out;
    }

    private static byte[] bytes(ByteBuffer buf, int at, int length) {
        byte[] out = new byte[length];
        buf.get(at, out);
        return out;
    }

    protected static ByteBuffer direct(long bytes) {
        return ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.LITTLE_ENDIAN);
    }
}
