package moe.a2a.dispatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ForwardingCommunicator;
import moe.a2a.comm.RankThreads;
import moe.a2a.comm.local.LocalGroup;
import moe.a2a.comm.shm.ShmTestGroups;
import moe.a2a.comm.tcp.TcpTestGroups;
import moe.a2a.kernels.DType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The low-latency dispatcher against the normal one on the same random steps: the same received
 * rows per expert, the same combined outputs bit for bit, in-process, over shared memory and TCP;
 * no count exchange; a batch over the bound refused naming the flag.
 */
@Timeout(60)
class LowLatencyDispatcherTest {
    static final int HIDDEN = 40;
    static final int MAX_TOKENS = 16;

    private final ShmTestGroups shm = new ShmTestGroups();
    private final TcpTestGroups tcp = new TcpTestGroups();

    @AfterEach
    void close() throws Exception {
        shm.closeAll();
        tcp.close();
    }

    @ParameterizedTest(name = "N={0} E={1} K={2} {3} dispatch {4} over {5}")
    @CsvSource({
        "4, 16, 4, BF16, BF16, local",
        "4, 16, 4, FP32, FP8, local",
        "3, 7, 3, FP16, BF16, local",
        "1, 4, 2, BF16, BF16, local",
        "4, 16, 4, BF16, BF16, shm",
        "2, 8, 2, FP32, FP8, shm",
        "4, 16, 4, BF16, BF16, tcp",
        "3, 9, 2, FP32, FP8, tcp"
    })
    void shouldMatchNormalModeBitForBit(
            int n,
            int experts,
            int topK,
            DType dtype,
            DispatchDType dispatchDType,
            String transport)
            throws Exception {
        Placement placement = Placement.contiguous(experts, n);
        long seed = 7L * n + experts + topK + dtype.ordinal();
        Step[] steps = new Step[n];
        SplittableRandom random = new SplittableRandom(seed);
        for (int r = 0; r < n; r++) {
            steps[r] = Step.random(random, random.nextInt(1, MAX_TOKENS + 1), experts, topK, dtype);
        }
        IntFunction<Communicator> normalGroup = group(transport, n);
        IntFunction<Communicator> llGroup = group(transport, n);
        List<float[]> normal =
                RankThreads.run(
                        n,
                        rank ->
                                steps[rank].run(
                                        new Dispatcher(
                                                normalGroup.apply(rank),
                                                placement,
                                                HIDDEN,
                                                topK,
                                                dispatchDType)));
        List<float[]> lowLatency =
                RankThreads.run(
                        n,
                        rank ->
                                steps[rank].run(
                                        new LowLatencyDispatcher(
                                                llGroup.apply(rank),
                                                placement,
                                                HIDDEN,
                                                topK,
                                                dispatchDType,
                                                MAX_TOKENS)));
        for (int r = 0; r < n; r++) {
            assertThat(lowLatency.get(r)).as("rank %d, seed %d", r, seed).isEqualTo(normal.get(r));
            assertThat(normal.get(r)).as("rank %d's output has values", r).isNotEmpty();
        }
    }

    @Test
    void shouldExchangeNoCounts() throws Exception {
        LocalGroup group = new LocalGroup(3);
        AtomicInteger counts = new AtomicInteger();
        Placement placement = Placement.contiguous(6, 3);
        SplittableRandom random = new SplittableRandom(5);
        Step[] steps = new Step[3];
        for (int r = 0; r < 3; r++) {
            steps[r] = Step.random(random, 1 + r, 6, 2, DType.BF16);
        }
        RankThreads.run(
                3,
                rank ->
                        steps[rank].run(
                                new LowLatencyDispatcher(
                                        new ForwardingCommunicator(group.communicator(rank)) {
                                            @Override
                                            public void allToAllCounts(
                                                    long step,
                                                    ExchangePhase phase,
                                                    long[] send,
                                                    long[] recv) {
                                                counts.incrementAndGet();
                                                super.allToAllCounts(step, phase, send, recv);
                                            }
                                        },
                                        placement,
                                        HIDDEN,
                                        2,
                                        DispatchDType.BF16,
                                        MAX_TOKENS)));
        assertThat(counts).as("count exchanges").hasValue(0);
    }

    @Test
    void shouldRefuseABatchOverTheBound() {
        LowLatencyDispatcher dispatcher =
                new LowLatencyDispatcher(
                        new LocalGroup(1).communicator(0),
                        Placement.contiguous(4, 1),
                        HIDDEN,
                        2,
                        DispatchDType.BF16,
                        8);
        Step step = Step.random(new SplittableRandom(3), 9, 4, 2, DType.BF16);
        assertThatThrownBy(() -> step.run(dispatcher))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("numTokens: 9 (expected: <= 8, the low-latency bound --ll-max-tokens)");
        assertThatThrownBy(
                        () ->
                                new LowLatencyDispatcher(
                                        new LocalGroup(1).communicator(0),
                                        Placement.contiguous(4, 1),
                                        HIDDEN,
                                        2,
                                        DispatchDType.BF16,
                                        0))
                .hasMessage("--ll-max-tokens: 0 (expected: >= 1 token a rank)");
    }

    private IntFunction<Communicator> group(String transport, int n) throws Exception {
        if (!transport.equals("local")) {
            Communicator[] comms =
                    transport.equals("shm")
                            ? shm.open(n, TimeUnit.SECONDS.toNanos(30))
                            : tcp.open(n, TimeUnit.SECONDS.toNanos(30));
            return r -> comms[r];
        }
        LocalGroup local = new LocalGroup(n);
        return local::communicator;
    }

    /** One rank's step: random tokens and routing; run twice, so the second reuses every buffer. */
    record Step(ByteBuffer tokens, int numTokens, DType dtype, int[] ids, float[] weights) {
        static Step random(SplittableRandom random, int t, int experts, int topK, DType dtype) {
            ByteBuffer tokens =
                    ByteBuffer.allocateDirect(Math.max(1, t * HIDDEN * dtype.sizeBytes()))
                            .order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < t * HIDDEN; i++) {
                dtype.put(tokens, i * dtype.sizeBytes(), (float) random.nextGaussian());
            }
            float[] weights = new float[t * topK];
            for (int i = 0; i < weights.length; i++) {
                weights[i] = (float) random.nextDouble();
            }
            return new Step(
                    tokens, t, dtype, TestRoutings.uniform(random, t, experts, topK), weights);
        }

        /** Dispatch, experts that scale each row by its slot + 1, combine: the output. */
        float[] run(DispatchPath path) {
            float[] out = new float[0];
            for (int round = 0; round < 2; round++) {
                DispatchResult result = path.dispatch(tokens, numTokens, dtype, ids, weights);
                DispatchHandle handle = result.handle();
                int rows = result.numExpertRows();
                FloatBuffer grouped =
                        ByteBuffer.allocateDirect(Math.max(1, rows * HIDDEN * 4))
                                .order(ByteOrder.nativeOrder())
                                .asFloatBuffer();
                for (int s = 0; s < handle.localExperts(); s++) {
                    result.gather(s, grouped, handle.expertOffsets(s) * HIDDEN);
                    for (int i = handle.expertOffsets(s) * HIDDEN;
                            i < handle.expertOffsets(s + 1) * HIDDEN;
                            i++) {
                        grouped.put(i, grouped.get(i) * (s + 1));
                    }
                }
                FloatBuffer combined =
                        ByteBuffer.allocateDirect(Math.max(1, numTokens * HIDDEN * 4))
                                .order(ByteOrder.nativeOrder())
                                .asFloatBuffer();
                new ExpertSums().write(grouped, handle, path.combineRows(handle));
                path.combine(handle, combined);
                out = new float[numTokens * HIDDEN];
                combined.get(0, out);
            }
            return out;
        }
    }
}
