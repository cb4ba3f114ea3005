package moe.a2a.workload;

import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * One canonical workload: DeepSeek-V3-shaped rows (bf16, {@code H = 7168}), {@code E = 256}
 * experts, top-8, expert {@code e} on rank {@code e / (E/N)}, seed 42; {@code N} ranks with {@code
 * T} tokens each, routed uniformly or by a Zipf law ({@code zipf > 0}), hot experts packed on rank
 * 0 or scattered ({@code permuted}); or a recorded routing replayed ({@code recorded}: each rank's
 * {@code [T, K]} ids, as a routing trace gave them). Immutable; the recorded ids are not copied.
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
        long seed,
        int @Nullable [][] recorded) {

    /** A drawn workload. */
    public BenchWorkload(
            String name,
            int worldSize,
            int tokens,
            int hidden,
            int experts,
            int topK,
            double zipf,
            boolean permuted,
            long seed) {
        this(name, worldSize, tokens, hidden, experts, topK, zipf, permuted, seed, null);
    }

    /**
     * A recorded routing replayed in rows of the canonical shape (bf16, {@code H = 7168}): rank r
     * sends {@code ids[r]}, {@code [T, K]}, every rank the same T.
     *
     * @throws IllegalArgumentException when the ranks' token counts differ, or {@code experts} do
     *     not divide evenly over the ranks (the contiguous placement needs it)
     */
    public static BenchWorkload recorded(String name, int experts, int topK, int[][] ids) {
        int n = ids.length;
        if (n == 0 || experts % n != 0) {
            throw new IllegalArgumentException(
                    name + ": " + experts + " experts over " + n + " ranks (expected: E % N == 0)");
        }
        for (int[] rank : ids) {
            if (rank.length != ids[0].length || rank.length % topK != 0) {
                throw new IllegalArgumentException(name + ": every rank needs the same [T, K] ids");
            }
        }
        return new BenchWorkload(
                name, n, ids[0].length / topK, 7168, experts, topK, 0, false, 0, ids);
    }

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
     * This workload with {@code t} tokens a rank, named {@code NAME-tT} ({@code decode-t8}); its
     * routing draws the same streams, so its first tokens route as the named workload's.
     */
    public BenchWorkload withTokens(int t) {
        return new BenchWorkload(
                canonicalName() + "-t" + t,
                worldSize,
                t,
                hidden,
                experts,
                topK,
                zipf,
                permuted,
                seed,
                recorded);
    }

    /** The canonical workload this one is drawn as: its name without a {@code -tT} suffix. */
    public String canonicalName() {
        int at = name.lastIndexOf("-t");
        return at > 0 && name.substring(at + 2).chars().allMatch(Character::isDigit)
                ? name.substring(0, at)
                : name;
    }

    /**
     * Iterations before measuring, as the peer harnesses run this workload (decode needs the JIT
     * warm).
     */
    public int defaultWarmup() {
        String base = canonicalName();
        return base.equals("decode") ? 20 : base.equals("prefill-n8") ? 2 : 3;
    }

    /** Measured iterations, as the peer harnesses run this workload. */
    public int defaultIters() {
        String base = canonicalName();
        return base.equals("decode") ? 200 : base.equals("prefill-n8") ? 15 : 40;
    }

    /** Bytes of one bf16 row. */
    public int rowBytes() {
        return hidden * 2;
    }

    public String routing() {
        if (recorded != null) {
            return "recorded";
        }
        return zipf == 0
                ? "uniform"
                : String.format(Locale.ROOT, "zipf s=%.1f%s", zipf, permuted ? " perm" : "");
    }

    /** The rank hosting {@code expert}. */
    public int rankOf(int expert) {
        return expert / (experts / worldSize);
    }
}
