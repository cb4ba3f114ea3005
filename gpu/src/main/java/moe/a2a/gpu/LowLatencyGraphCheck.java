package moe.a2a.gpu;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.function.Supplier;
import moe.a2a.comm.SparseCommunicator;
import moe.a2a.comm.nccl.NcclCommunicator;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankStep;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.SeededWeights;
import moe.a2a.experts.SharedExpert;
import moe.a2a.experts.WeightSource;
import moe.a2a.kernels.DType;

/**
 * The low-latency step on the GPU, world size 1: steps of a fixed bound run through {@link
 * GpuLowLatencySteps} twice, once captured and replayed as a CUDA graph and once enqueued call by
 * call, on the same seeded tokens; the two answers must be the same bits, the graph must really be
 * replaying, and the layer must match the scalar reference within the bf16 tolerance. Then both
 * ways are timed. The same again, untimed, for a layer with a gated shared expert, for a sparse
 * group and for an odd hidden size.
 */
final class LowLatencyGraphCheck {
    private static final int BOUND = 32;
    private static final int HIDDEN = 512;

    /** Odd: bf16 rows of 1022 bytes, so most region headers sit off 4-byte alignment. */
    private static final int ODD_HIDDEN = 511;

    private static final int FFN = 1024;
    private static final int EXPERTS = 8;
    private static final int TOP_K = 2;
    private static final int STEPS = 5;
    private static final int TIMED = 50;
    private static final Placement PLACEMENT = Placement.contiguous(EXPERTS, 1);

    private LowLatencyGraphCheck() {}

    /** Whose steps run: the plain layer (timed too), or one of two variants of it. */
    private enum Variant {
        PLAIN(""),
        /** A gated shared expert, its MLP on a stream of its own inside the graph. */
        SHARED(" with a gated shared expert"),
        /**
         * A sparse group: world rank 0 of 2 serving without rank 1, every expert replicated on
         * both; its regions are laid out for both ranks, and the lost rank's stays empty.
         */
        SPARSE(" of a sparse group (rank 1 of 2 lost)"),
        /** An odd hidden size: {@code ll_group} reads the headers a byte at a time. */
        ODD_ROWS(" at hidden size " + ODD_HIDDEN);

        final String label;

        Variant(String label) {
            this.label = label;
        }

        int hidden() {
            return this == ODD_ROWS ? ODD_HIDDEN : HIDDEN;
        }
    }

    /**
     * Every variant, each on the communicator {@code comm} gives then (a fresh one when a variant
     * before it left it aborted).
     */
    static void run(Supplier<NcclCommunicator> comm, CudaKernels kernels, CheckTable table) {
        for (Variant variant : Variant.values()) {
            GpuCheck.timed(
                    "LowLatencyGraphCheck " + variant.label,
                    table,
                    () -> check(comm.get(), kernels, table, variant));
        }
    }

    /** The steps both ways and against the reference; the plain layer's are timed too. */
    private static void check(
            NcclCommunicator comm, CudaKernels kernels, CheckTable table, Variant variant) {
        boolean withShared = variant == Variant.SHARED;
        int hidden = variant.hidden();
        ModelConfig model = new ModelConfig(EXPERTS, hidden, FFN, TOP_K, 1);
        SeededWeights seeded = new SeededWeights(11, EXPERTS, hidden, FFN, 1);
        float[] gate = new float[hidden];
        SplittableRandom random = new SplittableRandom(5);
        for (int c = 0; c < hidden; c++) {
            gate[c] = (float) random.nextDouble(-0.1, 0.1);
        }
        WeightSource weights =
                withShared
                        ? new Bf16Weights(
                                seeded,
                                new SharedExpert(
                                        new SeededWeights(12, EXPERTS, hidden, FFN, 1).expert(0, 0),
                                        gate))
                        : new Bf16Weights(seeded);
        Placement placement = variant == Variant.SPARSE ? sparsePlacement() : PLACEMENT;
        DeviceGroup group =
                DeviceGroup.of(
                        variant == Variant.SPARSE
                                ? new SparseCommunicator(comm, new int[] {0}, 2)
                                : comm);
        GpuExperts[] experts = {new GpuExperts(weights, 0, placement, 0, false, kernels)};
        SharedExpert sharedWeights = weights.sharedExpert(0);
        GpuSharedExpert[] shared = {
            sharedWeights == null ? null : new GpuSharedExpert(sharedWeights, false, kernels)
        };
        String layer = variant.label;
        ReferenceMoeLayer reference = new ReferenceMoeLayer(weights);
        try (GpuLowLatencySteps graphs =
                        new GpuLowLatencySteps(
                                group, model, kernels, l -> experts[l], l -> shared[l], true);
                GpuLowLatencySteps enqueued =
                        new GpuLowLatencySteps(
                                group, model, kernels, l -> experts[l], l -> shared[l], false)) {
            int differing = 0;
            double worst = 0;
            for (int i = 0; i < STEPS; i++) {
                Step step = Step.random(random, BOUND - 3 * i, hidden);
                byte[] replayed = answer(graphs, step, placement);
                byte[] plain = answer(enqueued, step, placement);
                differing += Arrays.equals(replayed, plain) ? 0 : 1;
                float[] expected =
                        reference.forward(0, step.x, step.tokens, TOP_K, step.ids, step.weights);
                worst = Math.max(worst, worstOfTolerance(replayed, expected, step.tokens, hidden));
            }
            boolean replaying =
                    graphs.replays(0, BOUND, DType.BF16) && !enqueued.replays(0, BOUND, DType.BF16);
            table.row(
                    "low-latency step (T=" + BOUND + ")" + layer + ", CUDA graph vs enqueued",
                    (differing == 0 ? "bit-exact" : differing + " of " + STEPS + " steps differ")
                            + (replaying ? ", graph replayed" : ", NO GRAPH"),
                    differing == 0 && replaying);
            table.row(
                    "low-latency layer" + layer + ", cuBLAS bf16 experts, vs reference",
                    String.format(
                            Locale.ROOT,
                            "worst error %.2f of the bf16 tolerance (2^-6 of the row's max)",
                            worst),
                    worst <= 1);
            if (variant != Variant.PLAIN) {
                return;
            }
            Step step = Step.random(random, 8, hidden);
            double graphUs = medianUs(graphs, step, placement);
            double enqueuedUs = medianUs(enqueued, step, placement);
            table.row(
                    "low-latency step time, 8 tokens (T=" + BOUND + ")",
                    String.format(
                            Locale.ROOT,
                            "graph %.1f µs, enqueued %.1f µs (median of %d, host to host)",
                            graphUs,
                            enqueuedUs,
                            TIMED),
                    true);
        } finally {
            experts[0].close();
            if (shared[0] != null) {
                shared[0].close();
            }
        }
    }

    /** A step's seeded tokens (bf16 rows and their fp32 values) and distinct-expert routing. */
    private record Step(
            ByteBuffer input, float[] x, int tokens, int hidden, int[] ids, float[] weights) {
        static Step random(SplittableRandom random, int tokens, int hidden) {
            ByteBuffer input =
                    ByteBuffer.allocateDirect(tokens * hidden * Short.BYTES)
                            .order(ByteOrder.LITTLE_ENDIAN);
            float[] x = new float[tokens * hidden];
            for (int i = 0; i < x.length; i++) {
                short b = DType.floatToBf16((float) random.nextDouble(-1, 1));
                input.putShort(i * Short.BYTES, b);
                x[i] = DType.bf16ToFloat(b);
            }
            int[] ids = new int[tokens * TOP_K];
            float[] weights = new float[tokens * TOP_K];
            for (int t = 0; t < tokens; t++) {
                int first = random.nextInt(EXPERTS);
                ids[t * TOP_K] = first;
                ids[t * TOP_K + 1] = (first + 1 + random.nextInt(EXPERTS - 1)) % EXPERTS;
                float w = (float) random.nextDouble(0.2, 0.8);
                weights[t * TOP_K] = w;
                weights[t * TOP_K + 1] = 1 - w;
            }
            return new Step(input, x, tokens, hidden, ids, weights);
        }
    }

    /** Every expert on both of 2 ranks, rank 1 lost: rank 0 takes every token. */
    private static Placement sparsePlacement() {
        int[] all = new int[EXPERTS];
        double[] shares = new double[EXPERTS];
        for (int e = 0; e < EXPERTS; e++) {
            all[e] = e;
            shares[e] = 1;
        }
        Placement both =
                Placement.of(1, EXPERTS, new int[][] {all, all}, new double[][] {shares, shares});
        return both.without(new boolean[] {false, true}, 2);
    }

    private static byte[] answer(GpuLowLatencySteps steps, Step step, Placement placement) {
        RankStep.Computed c = run(steps, step, placement);
        byte[] out = new byte[step.tokens * step.hidden * Short.BYTES];
        c.output().get(0, out);
        return out;
    }

    private static RankStep.Computed run(GpuLowLatencySteps steps, Step step, Placement placement) {
        return steps.run(
                0, DType.BF16, step.input, step.tokens, step.ids, step.weights, BOUND, placement);
    }

    private static double medianUs(GpuLowLatencySteps steps, Step step, Placement placement) {
        long[] ns = new long[TIMED];
        for (int i = 0; i < TIMED; i++) {
            long t0 = System.nanoTime();
            run(steps, step, placement);
            ns[i] = System.nanoTime() - t0;
        }
        Arrays.sort(ns);
        return ns[TIMED / 2] / 1e3;
    }

    private static double worstOfTolerance(byte[] bf16, float[] expected, int tokens, int hidden) {
        ByteBuffer out = ByteBuffer.wrap(bf16).order(ByteOrder.LITTLE_ENDIAN);
        double worst = 0;
        for (int t = 0; t < tokens; t++) {
            double rowMax = 0;
            for (int c = 0; c < hidden; c++) {
                rowMax = Math.max(rowMax, Math.abs(expected[t * hidden + c]));
            }
            // the answer is rounded to bf16 (2^-8 relative) on top of the experts' own error
            double tolerance = 0x1p-6 * rowMax + 1e-7;
            for (int c = 0; c < hidden; c++) {
                float actual = DType.bf16ToFloat(out.getShort((t * hidden + c) * Short.BYTES));
                worst = Math.max(worst, Math.abs(actual - expected[t * hidden + c]) / tolerance);
            }
        }
        return worst;
    }
}
