package moe.a2a.gpu;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Locale;
import java.util.SplittableRandom;
import moe.a2a.comm.nccl.NcclCommunicator;
import moe.a2a.dispatch.CapacityFilter;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ExpertWeights;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankStepResult;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.RoutingInput;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import moe.a2a.workload.BenchWorkload;

/**
 * {@link GpuCheck}'s served step: bf16 steps through {@link GpuRankRuntime}, the rank a worker
 * serves with, at the {@code prefill} workload's rank-0 shape: its T tokens of H channels, top-K
 * over the E / N experts rank 0 hosts there, each of DeepSeek-V3's FFN width, so the experts get
 * about the T × K rows rank 0 gets. World size 1: dispatch and combine run NCCL's send/recv to
 * itself, not across N ranks. Prints the step's stages from the rank's CUDA events, medians of a
 * few steps: moe-a2a's own time (dispatch, combine) beside the experts' GEMMs, and which cuBLAS
 * call ran them. Every expert holds the same seeded weights (values do not change the time; one is
 * generated, not E / N), and each token's routing weights sum to 1, so every output row is that one
 * MLP of the token: the row fails unless all T × K pairs reached an expert and {@link #CHECKED}
 * tokens' outputs match the reference MLP of the bf16 weights within 2^-6 of the row's largest
 * magnitude.
 */
final class ServedStepTiming {
    private static final int FFN = 2048;
    private static final int WARMUP = 2;
    private static final int STEPS = 5;

    /** The tokens whose outputs are checked: first, second, middle and last. */
    private static final int CHECKED = 4;

    private ServedStepTiming() {}

    static void run(NcclCommunicator comm, int device, CheckTable table) {
        BenchWorkload prefill = BenchWorkload.named("prefill");
        int experts = prefill.experts() / prefill.worldSize();
        int tokens = prefill.tokens();
        int hidden = prefill.hidden();
        int topK = prefill.topK();
        ModelConfig model = new ModelConfig(experts, hidden, FFN, topK, 1);
        String what =
                String.format(
                        Locale.ROOT,
                        "served bf16 step, prefill rank 0 (T=%d, H=%d, top-%d of %d experts, FFN"
                                + " %d)",
                        tokens,
                        hidden,
                        topK,
                        experts,
                        FFN);
        OneExpert held = new OneExpert(experts, hidden);
        try (GpuRankRuntime rank =
                new GpuRankRuntime(
                        model,
                        held,
                        Placement.contiguous(experts, 1),
                        0,
                        device,
                        GpuRankOptions.DEFAULT)) {
            rank.rebind(comm);
            SplittableRandom random = new SplittableRandom(7);
            ByteBuffer input =
                    ByteBuffer.allocateDirect(tokens * hidden * Short.BYTES)
                            .order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < tokens * hidden; i++) {
                input.putShort(
                        i * Short.BYTES, DType.floatToBf16((float) random.nextDouble(-1, 1)));
            }
            int[] ids = new int[tokens * topK];
            float[] weights = new float[tokens * topK];
            for (int t = 0; t < tokens; t++) {
                int[] chosen = random.ints(0, experts).distinct().limit(topK).toArray();
                for (int k = 0; k < topK; k++) {
                    ids[t * topK + k] = chosen[k];
                    weights[t * topK + k] = 1f / topK;
                }
            }
            long[][] ns = new long[4][STEPS];
            long routed = 0;
            RankStepResult r = null;
            for (int s = -WARMUP; s < STEPS; s++) {
                r =
                        rank.step(
                                0,
                                DType.BF16,
                                input,
                                tokens,
                                new RoutingInput.TopK(ids, weights),
                                CapacityFilter.UNLIMITED,
                                0);
                routed = Arrays.stream(r.tokensPerExpert()).sum();
                if (s >= 0) {
                    ns[0][s] = r.dispatchNs();
                    ns[1][s] = r.expertNs();
                    ns[2][s] = r.combineNs();
                    ns[3][s] = r.dispatchNs() + r.expertNs() + r.combineNs();
                }
            }
            double worst = worstOfChecked(held, r.output(), input, tokens, hidden);
            double dispatch = medianMs(ns[0]);
            double gemms = medianMs(ns[1]);
            double combine = medianMs(ns[2]);
            double step = medianMs(ns[3]);
            double flops = 2.0 * 3 * tokens * topK * (double) hidden * FFN;
            table.row(
                    what,
                    String.format(
                            Locale.ROOT,
                            "step %.2f ms: dispatch %.2f ms, experts %.2f ms (%.0f TFLOP/s, %s),"
                                    + " combine %.2f ms; moe-a2a's own %.0f %% of the step (median"
                                    + " of %d, CUDA events); %d of %d pairs routed, worst error"
                                    + " %.2f of the bf16 tolerance on %d tokens",
                            step,
                            dispatch,
                            gemms,
                            flops / gemms / 1e9,
                            GroupedGemms.calls(ExpertMath.BF16),
                            combine,
                            100 * (dispatch + combine) / step,
                            STEPS,
                            routed,
                            (long) tokens * topK,
                            worst,
                            CHECKED),
                    routed == (long) tokens * topK && worst <= 1);
        } catch (RuntimeException e) {
            e.printStackTrace(System.err);
            table.row(what, "failed: " + e, false);
        }
    }

    /**
     * The worst error, as a share of the bf16 tolerance, of the {@link #CHECKED} tokens' output
     * rows (bf16) against the reference MLP of the one expert {@code weights} holds (its expert 0,
     * the instance the rank was loaded from), held in bf16.
     */
    private static double worstOfChecked(
            OneExpert weights, ByteBuffer output, ByteBuffer input, int tokens, int hidden) {
        int[] checked = {0, 1, tokens / 2, tokens - 1};
        float[] x = new float[CHECKED * hidden];
        float[] actual = new float[CHECKED * hidden];
        for (int i = 0; i < CHECKED; i++) {
            for (int c = 0; c < hidden; c++) {
                int at = (checked[i] * hidden + c) * Short.BYTES;
                x[i * hidden + c] = DType.bf16ToFloat(input.getShort(at));
                actual[i * hidden + c] = DType.bf16ToFloat(output.getShort(at));
            }
        }
        int[] ids = new int[CHECKED];
        float[] ones = new float[CHECKED];
        Arrays.fill(ones, 1f);
        float[] expected =
                new ReferenceMoeLayer(new Bf16Weights(weights))
                        .forward(0, x, CHECKED, 1, ids, ones);
        return GpuCpuComparison.worstOfTolerance(actual, expected, CHECKED, hidden);
    }

    private static double medianMs(long[] ns) {
        long[] sorted = ns.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2] / 1e6;
    }

    /** {@code experts} experts of one layer, every one the same seeded weights. */
    private static final class OneExpert extends OneLayerWeights {
        private final SeededWeights seeded;
        private ExpertWeights expert;

        OneExpert(int experts, int hidden) {
            super(experts, hidden, FFN, "one seeded expert in every slot");
            this.seeded = new SeededWeights(3, 1, hidden, FFN, 1);
        }

        @Override
        public ExpertWeights expert(int layer, int e) {
            if (expert == null) {
                expert = seeded.expert(0, 0);
            }
            return expert;
        }
    }
}
