package moe.a2a.workload;

import java.util.Locale;
import moe.a2a.dispatch.DispatchLayout;
import moe.a2a.dispatch.Placement;
import moe.a2a.dispatch.RoutingCost;

/**
 * The routing of a {@link BenchWorkload}, exactly as the shared benchmark definition draws it
 * (splitmix64 streams per rank, Zipf table, Fisher-Yates permutation), so that peer harnesses in
 * other languages produce the same assignment and the same fingerprint. Stateless.
 */
public final class BenchRouting {
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;

    private BenchRouting() {}

    /** Source rank {@code rank}'s {@code [T, K]} expert ids (a copy of a recorded routing's). */
    public static int[] topkIds(BenchWorkload w, int rank) {
        if (w.recorded() != null) {
            return w.recorded()[rank].clone();
        }
        long[] st = {splitmix(new long[] {w.seed() ^ (0xA0761D6478BD642FL * (rank + 1))})};
        double[] cdf = w.zipf() > 0 ? zipfCdf(w.experts(), w.zipf()) : null;
        int[] perm = permutation(w);
        int k = w.topK();
        int[] ids = new int[w.tokens() * k];
        for (int t = 0; t < w.tokens(); t++) {
            for (int j = 0; j < k; j++) {
                int e;
                do {
                    long z = splitmix(st);
                    if (cdf == null) {
                        e = (int) Long.remainderUnsigned(z, w.experts());
                    } else {
                        double u = (z >>> 11) * 0x1.0p-53;
                        int i = 0;
                        while (!(cdf[i] > u)) {
                            i++;
                        }
                        e = perm[i];
                    }
                } while (contains(ids, t * k, j, e));
                ids[t * k + j] = e;
            }
        }
        return ids;
    }

    /**
     * rows[src][dst] under {@code placement}: how many of src's tokens have at least one chosen
     * replica on dst (each source choosing as its dispatcher does).
     */
    public static int[][] rows(BenchWorkload w, Placement placement) {
        RoutingCost cost = cost(w, placement);
        int n = w.worldSize();
        int[][] rows = new int[n][n];
        for (int src = 0; src < n; src++) {
            for (int dst = 0; dst < n; dst++) {
                rows[src][dst] = (int) cost.rows(src, dst);
            }
        }
        return rows;
    }

    /** Each expert's load: the workload's assignments routed to it, all ranks together. */
    public static double[] expertLoads(BenchWorkload w) {
        double[] loads = new double[w.experts()];
        for (int src = 0; src < w.worldSize(); src++) {
            for (int e : topkIds(w, src)) {
                loads[e]++;
            }
        }
        return loads;
    }

    /** What {@code w}'s routing costs under {@code placement}, each source choosing as above. */
    public static RoutingCost cost(BenchWorkload w, Placement placement) {
        int n = w.worldSize();
        DispatchLayout[] layouts = new DispatchLayout[n];
        for (int src = 0; src < n; src++) {
            layouts[src] = new DispatchLayout(placement, src);
            layouts[src].compute(topkIds(w, src), w.tokens(), w.topK());
        }
        return RoutingCost.of(layouts);
    }

    /** rows[src][dst]: how many of src's tokens have at least one expert on dst. */
    public static int[][] rows(BenchWorkload w) {
        int n = w.worldSize();
        int[][] rows = new int[n][n];
        for (int src = 0; src < n; src++) {
            int[] ids = topkIds(w, src);
            for (int t = 0; t < w.tokens(); t++) {
                boolean[] seen = new boolean[n];
                for (int j = 0; j < w.topK(); j++) {
                    int dst = w.rankOf(ids[t * w.topK() + j]);
                    if (!seen[dst]) {
                        seen[dst] = true;
                        rows[src][dst]++;
                    }
                }
            }
        }
        return rows;
    }

    /** FNV-1a 64 over {@code rows}, each count as 4 little-endian bytes, src-major, in hex. */
    public static String fingerprint(int[][] rows) {
        long h = 0xcbf29ce484222325L;
        for (int[] row : rows) {
            for (int count : row) {
                for (int b = 0; b < 4; b++) {
                    h ^= (count >>> (8 * b)) & 0xff;
                    h *= 0x100000001b3L;
                }
            }
        }
        return String.format(Locale.ROOT, "%016x", h);
    }

    /** The payload value of (src, token, column), before rounding to bf16. */
    public static float payload(int src, int token, int column) {
        return (src * 131 + token * 7 + column * 3) % 32;
    }

    private static long splitmix(long[] state) {
        state[0] += GOLDEN;
        long z = state[0];
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    private static double[] zipfCdf(int experts, double s) {
        double[] w = new double[experts];
        double total = 0;
        for (int i = 0; i < experts; i++) {
            w[i] = Math.pow(i + 1, -s);
            total += w[i];
        }
        double[] cdf = new double[experts];
        double sum = 0;
        for (int i = 0; i < experts; i++) {
            sum += w[i];
            cdf[i] = sum / total;
        }
        cdf[experts - 1] = 1.0;
        return cdf;
    }

    private static int[] permutation(BenchWorkload w) {
        int[] perm = new int[w.experts()];
        for (int i = 0; i < perm.length; i++) {
            perm[i] = i;
        }
        if (w.permuted()) {
            long[] st = {w.seed() ^ 0xD1B54A32D192ED03L};
            for (int i = perm.length - 1; i >= 1; i--) {
                int j = (int) Long.remainderUnsigned(splitmix(st), i + 1);
                int tmp = perm[i];
                perm[i] = perm[j];
                perm[j] = tmp;
            }
        }
        return perm;
    }

    private static boolean contains(int[] ids, int from, int count, int e) {
        for (int i = 0; i < count; i++) {
            if (ids[from + i] == e) {
                return true;
            }
        }
        return false;
    }
}
