package moe.a2a.experts;

/**
 * An expert's three SwiGLU projections as a CPU rank holds them: in the dtype the checkpoint stores
 * them, so a decode step reads each weight byte once and no wider than stored. {@link SwiGlu}
 * computes with either kind.
 */
public sealed interface HeldExpert permits ExpertWeights, Bf16Expert {
    int hidden();

    int ffn();

    /** Bytes its three projections take in memory. */
    long bytes();
}
