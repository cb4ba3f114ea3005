package moe.a2a.experts;

import java.util.stream.IntStream;
import moe.a2a.dispatch.GateSpec;
import moe.a2a.kernels.DType;
import org.jspecify.annotations.Nullable;

/**
 * Where expert and gate weights come from. Every rank opening the same source with the same
 * arguments sees the same weights, so a rank loads only the experts it hosts.
 */
public interface WeightSource {
    int experts();

    int hidden();

    int ffn();

    int layers();

    /** The dtype the weights are stored in. */
    DType dtype();

    /**
     * Loads expert {@code expert} of {@code layer} in fp32: the reference, and what GPUs upload.
     */
    ExpertWeights expert(int layer, int expert);

    /**
     * Loads expert {@code expert} of {@code layer} as a CPU rank holds it: in the stored dtype
     * where a kernel computes with it ({@link Bf16Expert} for bf16), else fp32. Its values are
     * {@link #expert}'s exactly.
     */
    default HeldExpert heldExpert(int layer, int expert) {
        return expert(layer, expert);
    }

    /**
     * Expert {@code expert} of {@code layer} as the source stores it in FP8 (E4M3 with block
     * scales), or null when it does not: what a GPU rank can hold instead of bf16, at half the
     * memory. {@link #expert} gives the same weights dequantized.
     */
    default @Nullable Fp8Expert fp8Expert(int layer, int expert) {
        return null;
    }

    /** The router weight of {@code layer}, {@code [E, H]} row-major. */
    float[] gate(int layer);

    /** For logs and DescribeModel: {@code seeded:<seed>} or the file path. */
    String description();

    /** How the router turns logits into top-k: Mixtral's softmax top-k unless the model says. */
    default GateSpec gateSpec() {
        return GateSpec.MIXTRAL;
    }

    /**
     * The score-correction bias {@code [E]} of {@code layer}'s router, or null when it has none.
     */
    default float @Nullable [] gateBias(int layer) {
        return null;
    }

    /** The model's own index of each MoE layer, in order: {@code 0..layers()-1} unless it says. */
    default int[] layerNumbers() {
        return IntStream.range(0, layers()).toArray();
    }

    /** {@code layer}'s shared expert, or null when the model has none. */
    default @Nullable SharedExpert sharedExpert(int layer) {
        return null;
    }

    /** For DescribeModel: the checkpoint's architecture, or how the weights were made. */
    default String architecture() {
        return "mixtral-style";
    }

    /** For DescribeModel: how the expert weights are stored. */
    default String weightFormat() {
        return dtype().name();
    }
}
