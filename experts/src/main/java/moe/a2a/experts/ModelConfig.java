package moe.a2a.experts;

/**
 * The shape of the served MoE model. Immutable and validated when built.
 *
 * @param experts logical experts per layer ({@code E})
 * @param hidden hidden size ({@code H})
 * @param ffn expert intermediate size ({@code I})
 * @param topK experts per token ({@code K})
 * @param layers MoE layers
 */
public record ModelConfig(int experts, int hidden, int ffn, int topK, int layers) {
    public ModelConfig {
        positive("experts", experts);
        positive("hidden", hidden);
        positive("ffn", ffn);
        positive("layers", layers);
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
