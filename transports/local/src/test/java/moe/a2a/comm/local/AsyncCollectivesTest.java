package moe.a2a.comm.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.AsyncCollectives;
import moe.a2a.comm.CollectiveAlgo;
import moe.a2a.comm.CollectiveHandle;
import moe.a2a.comm.RankThreads;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class AsyncCollectivesTest {
    /**
     * Each rank starts three all-reduces and an all-gather without waiting, computes a sum of its
     * own meanwhile, then waits: every result equals the reference and the computation is intact.
     */
    @Test
    void shouldRunQueuedCollectivesInOrderWhileTheRankComputes() throws Exception {
        final int n = 4;
        final int count = 50_000;
        LocalGroup group = new LocalGroup(n, TimeUnit.SECONDS.toNanos(20));
        SplittableRandom random = new SplittableRandom(21);
        float[][][] inputs = new float[3][n][count];
        for (float[][] call : inputs) {
            for (float[] in : call) {
                for (int i = 0; i < count; i++) {
                    in[i] = random.nextInt(-8, 9);
                }
            }
        }
        List<List<float[]>> outs =
                RankThreads.run(
                        n,
                        r -> {
                            try (AsyncCollectives async =
                                    new AsyncCollectives(group.communicator(r))) {
                                List<ByteBuffer> bufs = new ArrayList<>();
                                List<CollectiveHandle> handles = new ArrayList<>();
                                for (float[][] call : inputs) {
                                    ByteBuffer buf = fp32(call[r]);
                                    bufs.add(buf);
                                    handles.add(
                                            async.allReduce(
                                                    buf,
                                                    buf,
                                                    count,
                                                    DType.FP32,
                                                    ReduceOp.SUM,
                                                    CollectiveAlgo.RING));
                                }
                                ByteBuffer mine = direct(4).putInt(0, r);
                                ByteBuffer gathered = direct(4 * n);
                                handles.add(async.allGather(mine, gathered, 4));
                                double overlapped = 0;
                                for (int i = 0; i < 1_000_000; i++) {
                                    overlapped += Math.sqrt(i);
                                }
                                for (CollectiveHandle h : handles) {
                                    h.await();
                                    assertThat(h.isDone()).isTrue();
                                }
                                assertThat(overlapped).isGreaterThan(0);
                                for (int p = 0; p < n; p++) {
                                    assertThat(gathered.getInt(4 * p)).isEqualTo(p);
                                }
                                List<float[]> results = new ArrayList<>();
                                for (ByteBuffer b : bufs) {
                                    float[] out = new float[count];
                                    DType.FP32.decode(b, 0, out, 0, count);
                                    results.add(out);
                                }
                                return results;
                            }
                        });
        for (int call = 0; call < 3; call++) {
            float[] expected = new float[count];
            for (float[] in : inputs[call]) {
                for (int i = 0; i < count; i++) {
                    expected[i] += in[i];
                }
            }
            for (int r = 0; r < n; r++) {
                assertThat(outs.get(r).get(call))
                        .as("call %d rank %d", call, r)
                        .isEqualTo(expected);
            }
        }
    }

    @Test
    void shouldRethrowTheCollectivesFailureFromItsHandle() throws Exception {
        LocalGroup group = new LocalGroup(2, TimeUnit.SECONDS.toNanos(20));
        try (AsyncCollectives async = new AsyncCollectives(group.communicator(0))) {
            ByteBuffer buf = direct(4000);
            CollectiveHandle pending =
                    async.allReduce(buf, buf, 1000, DType.FP32, ReduceOp.SUM, CollectiveAlgo.RING);
            assertThat(pending.await(50, TimeUnit.MILLISECONDS)).as("rank 1 never came").isFalse();
            group.communicator(1).abort(new A2aException("rank 1 gave up"));
            assertThatThrownBy(pending::await)
                    .isInstanceOf(A2aException.class)
                    .hasMessageContaining("rank 1 gave up");
            CollectiveHandle bad = async.allGather(buf, direct(4), 4000);
            assertThatThrownBy(bad::await)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("recv.capacity");
            async.drain();
        }
    }

    private static ByteBuffer fp32(float[] values) {
        ByteBuffer buf = direct(4L * values.length);
        DType.FP32.encode(values, 0, values.length, buf, 0);
        return buf;
    }

    private static ByteBuffer direct(long bytes) {
        return ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.LITTLE_ENDIAN);
    }
}
