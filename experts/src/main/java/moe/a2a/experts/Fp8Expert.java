package moe.a2a.experts;

/**
 * An expert's three SwiGLU projections as an FP8 checkpoint stores them ({@link ExpertWeights}'
 * shapes: {@code w1} and {@code w3} {@code [ffn, hidden]}, {@code w2} {@code [hidden, ffn]}).
 */
public record Fp8Expert(int hidden, int ffn, Fp8Matrix w1, Fp8Matrix w3, Fp8Matrix w2) {
    /** The expert in fp32, as {@link WeightSource#expert} gives it. */
    public ExpertWeights dequantized() {
        return new ExpertWeights(hidden, ffn, w1.dequantized(), w3.dequantized(), w2.dequantized());
    }
}
