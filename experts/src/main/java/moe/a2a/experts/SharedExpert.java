package moe.a2a.experts;

import org.jspecify.annotations.Nullable;

/**
 * A layer's shared expert: a SwiGLU MLP every token goes through beside its routed experts, its
 * output added unweighted (DeepSeek's {@code n_shared_experts}, one MLP of their joint width) or
 * scaled per token by {@code sigmoid(gate · x)} (Qwen2-MoE's {@code shared_expert_gate}).
 *
 * @param gate {@code [H]}, or null when the output is added as it is
 */
public record SharedExpert(ExpertWeights mlp, float @Nullable [] gate) {}
