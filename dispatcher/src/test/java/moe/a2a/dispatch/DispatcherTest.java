package moe.a2a.dispatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.RankThreads;
import moe.a2a.comm.local.LocalGroup;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.RowKernels;
import moe.a2a.kernels.ScalarKernels;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Dispatch → identity experts → combine must return each token's weighted input. */
@Timeout(60)
class DispatcherTest {
    /** The tests' ranks bring at most 39 tokens. */
    static final int LL_MAX_TOKENS = 40;

    enum Routing {
        UNIFORM,
        ONE_EXPERT,
        /** Uniform, a quarter of the pairs dropped as over capacity. */
        DROPPING
    }

    /** Every case in normal mode, then in low-latency mode (fixed regions of 40 tokens a rank). */
    static List<Arguments> cases() {
        List<Arguments> cases = new ArrayList<>();
        for (boolean lowLatency : new boolean[] {false, true}) {
            for (Arguments base : baseCases()) {
                Object[] args = Arrays.copyOf(base.get(), base.get().length + 1);
                args[args.length - 1] = lowLatency;
                cases.add(Arguments.of(args));
            }
        }
        return cases;
    }

    static List<Arguments> baseCases() {
        return List.of(
                Arguments.of(1, 4, 2, 0, Routing.UNIFORM, DType.FP32, DispatchDType.BF16, false),
                Arguments.of(2, 8, 2, 0, Routing.UNIFORM, DType.BF16, DispatchDType.BF16, false),
                Arguments.of(3, 7, 3, 0, Routing.UNIFORM, DType.FP16, DispatchDType.BF16, false),
                Arguments.of(4, 16, 4, 0, Routing.UNIFORM, DType.BF16, DispatchDType.BF16, false),
                Arguments.of(
                        4, 16, 2, 0, Routing.ONE_EXPERT, DType.FP32, DispatchDType.BF16, false),
                Arguments.of(8, 32, 8, 0, Routing.UNIFORM, DType.FP32, DispatchDType.BF16, false),
                // T smaller than N: most ranks bring no tokens
                Arguments.of(8, 16, 2, 1, Routing.UNIFORM, DType.BF16, DispatchDType.BF16, false),
                // E smaller than N: some ranks host no expert
                Arguments.of(4, 3, 2, 0, Routing.UNIFORM, DType.FP32, DispatchDType.BF16, false),
                Arguments.of(8, 8, 1, 0, Routing.ONE_EXPERT, DType.BF16, DispatchDType.BF16, false),
                // FP8 dispatch: the experts see each token after one quantize/dequantize
                Arguments.of(4, 16, 4, 0, Routing.UNIFORM, DType.FP32, DispatchDType.FP8, false),
                Arguments.of(3, 7, 3, 0, Routing.UNIFORM, DType.BF16, DispatchDType.FP8, false),
                Arguments.of(2, 8, 2, 0, Routing.UNIFORM, DType.FP16, DispatchDType.FP8, false),
                // redundant experts: replicas with planned shares; local replicas first
                Arguments.of(4, 8, 2, 0, Routing.UNIFORM, DType.BF16, DispatchDType.BF16, true),
                Arguments.of(3, 6, 3, 0, Routing.UNIFORM, DType.FP32, DispatchDType.BF16, true),
                Arguments.of(4, 8, 4, 0, Routing.ONE_EXPERT, DType.BF16, DispatchDType.BF16, true),
                // pairs dropped by expert capacity go nowhere and add nothing
                Arguments.of(4, 8, 2, 0, Routing.DROPPING, DType.BF16, DispatchDType.BF16, false),
                Arguments.of(3, 6, 3, 0, Routing.DROPPING, DType.FP32, DispatchDType.BF16, true));
    }

    @ParameterizedTest(
            name = "N={0} E={1} K={2} maxT={3} {4} {5} dispatch {6} replicas {7} low-latency {8}")
    @MethodSource("cases")
    void shouldReturnWeightedInputWhenExpertsAreIdentity(
            int n,
            int numExperts,
            int topK,
            int fixedTokens,
            Routing routing,
            DType dtype,
            DispatchDType dispatchDType,
            boolean replicas,
            boolean lowLatency)
            throws Exception {
        final int hidden = 24;
        final long seed = 31L * n + numExperts + topK;
        Placement placement =
                replicas ? replicated(numExperts, n, seed) : Placement.contiguous(numExperts, n);
        LocalGroup group = new LocalGroup(n);
        RankInput[] inputs = new RankInput[n];
        SplittableRandom random = new SplittableRandom(seed);
        for (int r = 0; r < n; r++) {
            int t = fixedTokens > 0 ? (r == 0 ? fixedTokens : 0) : random.nextInt(0, 40);
            inputs[r] = RankInput.random(random, t, hidden, numExperts, topK, routing, dtype);
        }
        List<float[]> outputs =
                RankThreads.run(
                        n,
                        rank -> {
                            DispatchPath dispatcher =
                                    path(
                                            group.communicator(rank),
                                            placement,
                                            hidden,
                                            topK,
                                            dispatchDType,
                                            lowLatency);
                            float[] out = new float[0];
                            for (int round = 0;
                                    round < 2;
                                    round++) { // the second round reuses every buffer
                                RankInput in = inputs[rank];
                                DispatchResult result =
                                        dispatcher.dispatch(
                                                in.tokens, in.numTokens, dtype, in.ids, in.weights);
                                int rows = result.numExpertRows();
                                FloatBuffer grouped =
                                        ByteBuffer.allocateDirect(Math.max(1, rows * hidden * 4))
                                                .order(ByteOrder.nativeOrder())
                                                .asFloatBuffer();
                                DispatchHandle handle = result.handle();
                                for (int s = 0; s < handle.localExperts(); s++) {
                                    result.gather(s, grouped, handle.expertOffsets(s) * hidden);
                                }
                                FloatBuffer combined =
                                        ByteBuffer.allocateDirect(
                                                        Math.max(1, in.numTokens * hidden * 4))
                                                .order(ByteOrder.nativeOrder())
                                                .asFloatBuffer();
                                new ExpertSums()
                                        .write(grouped, handle, dispatcher.combineRows(handle));
                                dispatcher.combine(handle, combined);
                                out = new float[in.numTokens * hidden];
                                combined.get(0, out);
                            }
                            return out;
                        });
        for (int r = 0; r < n; r++) {
            RankInput in = inputs[r];
            for (int t = 0; t < in.numTokens; t++) {
                float[] x = sentRow(in, t, hidden, dtype, dispatchDType);
                for (int c = 0; c < hidden; c++) {
                    float expected = 0;
                    for (int k = 0; k < topK; k++) {
                        if (in.ids[t * topK + k] != CapacityFilter.DROPPED) {
                            expected += in.weights[t * topK + k] * x[c];
                        }
                    }
                    float actual = outputs.get(r)[t * hidden + c];
                    String where = "seed=%d rank=%d token=%d col=%d";
                    if (dispatchDType == DispatchDType.BF16) {
                        assertThat(actual).as(where, seed, r, t, c).isEqualTo(expected);
                    } else {
                        // FP8 values are not small integers: each rank's partial sum is rounded
                        // to the tokens' dtype before it travels back
                        float tolerance = dtype == DType.FP32 ? 1e-5f : 8 * 0x1p-7f;
                        assertThat(actual)
                                .as(where, seed, r, t, c)
                                .isCloseTo(expected, within(tolerance));
                    }
                }
            }
        }
    }

    /** The normal dispatcher, or a low-latency one for at most {@link #LL_MAX_TOKENS} tokens. */
    static DispatchPath path(
            Communicator comm,
            Placement placement,
            int hidden,
            int topK,
            DispatchDType dispatchDType,
            boolean lowLatency) {
        return lowLatency
                ? new LowLatencyDispatcher(
                        comm, placement, hidden, topK, dispatchDType, LL_MAX_TOKENS)
                : new Dispatcher(comm, placement, hidden, topK, dispatchDType);
    }

    /** N extra slots, placed by the planner for random loads: replicas with uneven shares. */
    private static Placement replicated(int numExperts, int n, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        double[] loads = new double[numExperts];
        for (int e = 0; e < numExperts; e++) {
            loads[e] = random.nextDouble(0.1, 10);
        }
        int slots = Math.ceilDiv(numExperts, n) * n + n;
        Placement placement =
                PlacementPlanner.plan(loads, n, slots, 1, 1).placement(2, numExperts, n);
        int replicated = 0;
        for (int e = 0; e < numExperts; e++) {
            replicated += placement.replicas(e) > 1 ? 1 : 0;
        }
        assertThat(replicated).isPositive();
        return placement;
    }

    /** Token {@code t} as the experts see it: as sent, or after the scalar FP8 round trip. */
    private static float[] sentRow(
            RankInput in, int t, int hidden, DType dtype, DispatchDType dispatchDType) {
        float[] x = new float[hidden];
        for (int c = 0; c < hidden; c++) {
            x[c] = dtype.get(in.tokens, (t * hidden + c) * dtype.sizeBytes());
        }
        if (dispatchDType == DispatchDType.FP8) {
            MemorySegment row = MemorySegment.ofArray(x);
            MemorySegment fp8 = MemorySegment.ofArray(new byte[RowKernels.fp8RowBytes(hidden)]);
            ScalarKernels.quantizeFp8(row, 0, fp8, 0, hidden);
            ScalarKernels.dequantizeFp8(fp8, 0, row, 0, hidden);
        }
        return x;
    }

    /**
     * One rank's tokens and routing. Values are small integers and weights multiples of 1/8, so
     * every sum is exact in every dtype and the comparison can be exact.
     */
    record RankInput(ByteBuffer tokens, int numTokens, int[] ids, float[] weights) {
        static RankInput random(
                SplittableRandom random,
                int t,
                int hidden,
                int numExperts,
                int topK,
                Routing routing,
                DType dtype) {
            ByteBuffer tokens =
                    ByteBuffer.allocateDirect(Math.max(1, t * hidden * dtype.sizeBytes()))
                            .order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < t * hidden; i++) {
                dtype.put(tokens, i * dtype.sizeBytes(), random.nextInt(-8, 9));
            }
            int[] ids =
                    routing == Routing.ONE_EXPERT
                            ? TestRoutings.concentrated(t, topK, numExperts - topK)
                            : TestRoutings.uniform(random, t, numExperts, topK);
            float[] weights = new float[t * topK];
            for (int tok = 0; tok < t; tok++) {
                int left = 8;
                for (int k = 0; k < topK; k++) {
                    int share = k == topK - 1 ? left : random.nextInt(1, left - (topK - k - 1) + 1);
                    weights[tok * topK + k] = share / 8f;
                    left -= share;
                }
            }
            if (routing == Routing.DROPPING) {
                for (int i = 0; i < ids.length; i++) {
                    if (random.nextInt(4) == 0) {
                        ids[i] = CapacityFilter.DROPPED;
                    }
                }
            }
            return new RankInput(tokens, t, ids, weights);
        }
    }
}
