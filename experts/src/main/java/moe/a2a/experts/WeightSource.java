package moe.a2a.experts;

import moe.a2a.dispatch.DType;

/**
 * Where expert and gate weights come from. Every rank opening the same source with the same
 * arguments sees the same weights, so a rank loads only the experts it hosts.
 */
public interface WeightSource {
    int experts();

    int hidden();

    int ffn();

    int layers();

    /** The dtype the weights are stored in (they are widened to fp32 when loaded). */
    DType dtype();

    /** Loads expert {@code expert} of {@code layer}. */
    ExpertWeights expert(int layer, int expert);

    /** The router weight of {@code layer}, {@code [E, H]} row-major. */
    float[] gate(int layer);

    /** For logs and DescribeModel: {@code seeded:<seed>} or the file path. */
    String description();
}
