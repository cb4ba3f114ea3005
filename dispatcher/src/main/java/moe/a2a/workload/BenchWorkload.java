package moe.a2a.workload;

import java.util.List;
import java.util.Locale;

/**
 * One canonical workload: DeepSeek-V3-shaped rows (bf16, {@code H = 7168}), {@code E = 256}
 * experts, top-8, expert {@code e} on rank {@code e / (E/N)}, seed 42; {@code N} ranks with {@code
 * T} tokens each, routed uniformly or by a Zipf law ({@code zipf > 0}), hot experts packed on rank
 * 0 or scattered ({@code permuted}). Immutable.
 */
public record BenchWorkload(
        String name,
        int worldSize,
        int tokens,
        int hidden,
        int experts,
        int topK,
        double zipf,
        boolean permuted,
        long seed) {

    public static final List<BenchWorkload> CANONICAL =
            List.of(
                    canonical("decode", 4, 128, 0, false),
                    canonical("prefill", 4, 2048, 0, false),
                    canonical("prefill-skew", 4, 2048, 1.2, false),
                    canonical("prefill-skew-perm", 4, 2048, 1.2, true),
                    canonical("prefill-n2", 2, 2048, 0, false),
                    canonical("prefill-n8", 8, 2048, 0, false));

    private static BenchWorkload canonical(
            String name, int n, int t, double zipf, boolean permuted) {
        return new BenchWorkload(name, n, t, 7168, 256, 8, zipf, permuted, 42);
    }

    /** The canonical workload called {@code name}. */
    public static BenchWorkload named(String name) {
        for (BenchWorkload w : CANONICAL) {
            if (w.name.equals(name)) {
                return w;
            }
        }
        throw new IllegalArgumentException(
                "workload: "
                        + name
                        + " (expected: one of "
                        + CANONICAL.stream().map(BenchWorkload::name).toList()
                        + ")");
    }

    /**
     * Iterations before measuring, as the peer harnesses run this workload (decode needs the JIT
     * warm).
     */
    public int defaultWarmup() {
        return name.equals("decode") ? 20 : name.equals("prefill-n8") ? 2 : 3;
    }

    /** Measured iterations, as the peer harnesses run this workload. */
    public int defaultIters() {
        return name.equals("decode") ? 200 : name.equals("prefill-n8") ? 15 : 40;
    }

    /** Bytes of one bf16 row. */
    public int rowBytes() {
        return hidden * 2;
    }

    public String routing() {
        return zipf == 0
                ? "uniform"
                : String.format(Locale.ROOT, "zipf s=%.1f%s", zipf, permuted ? " perm" : "");
    }

    /** The rank hosting {@code expert}. */
    public int rankOf(int expert) {
        return expert / (experts / worldSize);
    }
}
