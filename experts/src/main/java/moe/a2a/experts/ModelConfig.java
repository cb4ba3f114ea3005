package moe.a2a.experts;

import moe.a2a.dispatch.DispatchDType;

/**
 * The shape of the served MoE model. Immutable and validated when built.
 *
 * @param experts logical experts per layer ({@code E})
 * @param hidden hidden size ({@code H})
 * @param ffn expert intermediate size ({@code I})
 * @param topK experts per token ({@code K})
 * @param layers MoE layers
 * @param dispatchDType how token rows travel in dispatch: a serving choice every rank must share
 * @param microBatches 1, or 2: a rank's step runs as two halves whose exchanges overlap the other
 *     half's experts ({@link CpuRankRuntime}); a serving choice every rank must share
 */
public record ModelConfig(
        int experts,
        int hidden,
        int ffn,
        int topK,
        int layers,
        DispatchDType dispatchDType,
        int microBatches) {
    /** The largest {@link #microBatches}. */
    public static final int MAX_MICRO_BATCHES = 2;

    /** A model of one batch per step. */
    public ModelConfig(
            int experts, int hidden, int ffn, int topK, int layers, DispatchDType dispatchDType) {
        this(experts, hidden, ffn, topK, layers, dispatchDType, 1);
    }

    /** A model whose rows travel as the tokens came ({@link DispatchDType#BF16}). */
    public ModelConfig(int experts, int hidden, int ffn, int topK, int layers) {
        this(experts, hidden, ffn, topK, layers, DispatchDType.BF16);
    }

    /** The same model with rows travelling as {@code dispatchDType}. */
    public ModelConfig withDispatchDType(DispatchDType dispatchDType) {
        return new ModelConfig(experts, hidden, ffn, topK, layers, dispatchDType, microBatches);
    }

    /** The same model with each step run as {@code microBatches} halves. */
    public ModelConfig withMicroBatches(int microBatches) {
        return new ModelConfig(experts, hidden, ffn, topK, layers, dispatchDType, microBatches);
    }

    public ModelConfig {
        positive("experts", experts);
        positive("hidden", hidden);
        positive("ffn", ffn);
        positive("layers", layers);
        if (microBatches < 1 || microBatches > MAX_MICRO_BATCHES) {
            throw new IllegalArgumentException(
                    "microBatches: "
                            + microBatches
                            + " (expected: 1 or "
                            + MAX_MICRO_BATCHES
                            + ")");
        }
        if (topK <= 0 || topK > experts) {
            throw new IllegalArgumentException(
                    "topK: " + topK + " (expected: in [1, " + experts + "], the expert count)");
        }
    }

    private static void positive(String name, int value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + ": " + value + " (expected: > 0)");
        }
    }
}
