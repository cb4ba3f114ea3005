package moe.a2a.kernels;

/**
 * The element-wise reductions of all-reduce and reduce-scatter, applied in fp32 whatever the
 * element type. Each is commutative bit for bit (a NaN operand gives a NaN), so two ranks that
 * reduce the same pair in either order hold the same bits.
 */
public enum ReduceOp {
    SUM,
    MAX,
    MIN;

    /** {@code a op b} in fp32; {@link Math#max} and {@link Math#min} semantics for NaN and ±0. */
    public float apply(float a, float b) {
        return switch (this) {
            case SUM -> a + b;
            case MAX -> Math.max(a, b);
            case MIN -> Math.min(a, b);
        };
    }
}
