package moe.a2a.benchmarks;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import moe.a2a.bench.BenchWorkloads;
import moe.a2a.workload.BenchRouting;
import moe.a2a.workload.BenchWorkload;

/**
 * How few dispatch rows a balanced placement of a canonical workload can have: a probe, not a
 * planner. The {@code full} hottest experts get a slot on every rank (each token uses the one on
 * its home rank), every other expert one slot; simulated annealing then swaps the other experts
 * between ranks, keeping every rank's (token, expert) pairs within BALANCE (1.10 unless given) of
 * the mean, to lower the rows (a token counts once for each rank it visits, its own included). With
 * 16 redundant slots over 4 ranks at most 5 experts fit on every rank ({@code 4F + 256 - F <= 272}).
 * WORKLOAD is a canonical name or {@code trace:LAYER:FILE}, a recorded routing.
 *
 * <p>{@code java -cp benchmarks/target/benchmarks.jar moe.a2a.benchmarks.RowsBound WORKLOAD FULL
 * MOVES [BALANCE]}, after {@code ./mvnw -Pjmh package -pl benchmarks -am}.
 */
public final class RowsBound {
    private static final double DEFAULT_BALANCE = 1.10;

    private RowsBound() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 3 && args.length != 4) {
            System.err.println("usage: RowsBound WORKLOAD FULL MOVES [BALANCE]");
            System.exit(2);
        }
        final BenchWorkload w = BenchWorkloads.resolve(args[0]);
        final int full = Integer.parseInt(args[1]);
        final long moves = Long.parseLong(args[2]);
        final double balance = args.length == 4 ? Double.parseDouble(args[3]) : DEFAULT_BALANCE;
        final int n = w.worldSize();
        final int k = w.topK();
        final int tokens = n * w.tokens();
        final int[] home = new int[tokens];
        final int[][] chosen = new int[tokens][];
        final double[] loads = new double[w.experts()];
        for (int src = 0; src < n; src++) {
            final int[] ids = BenchRouting.topkIds(w, src);
            for (int t = 0; t < w.tokens(); t++) {
                home[src * w.tokens() + t] = src;
                chosen[src * w.tokens() + t] = Arrays.copyOfRange(ids, t * k, t * k + k);
                for (int j = 0; j < k; j++) {
                    loads[ids[t * k + j]]++;
                }
            }
        }
        final Integer[] order = new Integer[w.experts()];
        Arrays.setAll(order, e -> e);
        Arrays.sort(order, (a, b) -> Double.compare(loads[b], loads[a]));
        final boolean[] everywhere = new boolean[w.experts()];
        for (int i = 0; i < full; i++) {
            everywhere[order[i]] = true;
        }
        final List<List<Integer>> tokensOf = new ArrayList<>();
        for (int e = 0; e < w.experts(); e++) {
            tokensOf.add(new ArrayList<>());
        }
        for (int t = 0; t < tokens; t++) {
            for (int e : chosen[t]) {
                tokensOf.get(e).add(t);
            }
        }
        // start: the other experts, heaviest first, each to the least loaded rank
        final int[] rankOf = new int[w.experts()];
        final double[] rankLoad = new double[n];
        for (int i = full; i < w.experts(); i++) {
            int best = 0;
            for (int r = 1; r < n; r++) {
                best = rankLoad[r] < rankLoad[best] ? r : best;
            }
            rankOf[order[i]] = best;
            rankLoad[best] += loads[order[i]];
        }
        final int[][] onRank = new int[tokens][n];
        final long[] pairs = new long[n];
        long rows = 0;
        for (int t = 0; t < tokens; t++) {
            for (int e : chosen[t]) {
                final int r = everywhere[e] ? home[t] : rankOf[e];
                onRank[t][r]++;
                pairs[r]++;
            }
            for (int r = 0; r < n; r++) {
                rows += onRank[t][r] > 0 ? 1 : 0;
            }
        }
        final double limit = balance * tokens * k / n;
        final SplittableRandom random = new SplittableRandom(1);
        double temperature = 50;
        for (long move = 0; move < moves; move++) {
            final int e1 = order[full + random.nextInt(w.experts() - full)];
            final int e2 = order[full + random.nextInt(w.experts() - full)];
            final int a = rankOf[e1];
            final int b = rankOf[e2];
            if (a == b) {
                continue;
            }
            final long delta = shift(tokensOf.get(e1), onRank, a, b) + shift(tokensOf.get(e2), onRank, b, a);
            final long pa = pairs[a] - tokensOf.get(e1).size() + tokensOf.get(e2).size();
            final long pb = pairs[b] + tokensOf.get(e1).size() - tokensOf.get(e2).size();
            final boolean balanced =
                    pa <= limit && pb <= limit || Math.max(pa, pb) < Math.max(pairs[a], pairs[b]);
            if (balanced
                    && (delta <= 0 || random.nextDouble() < Math.exp(-delta / temperature))) {
                rows += delta;
                pairs[a] = pa;
                pairs[b] = pb;
                rankOf[e1] = b;
                rankOf[e2] = a;
            } else {
                shift(tokensOf.get(e2), onRank, a, b);
                shift(tokensOf.get(e1), onRank, b, a);
            }
            temperature = Math.max(0.01, temperature * 0.99997);
        }
        final long[] recv = new long[n];
        for (int t = 0; t < tokens; t++) {
            for (int r = 0; r < n; r++) {
                recv[r] += onRank[t][r] > 0 ? 1 : 0;
            }
        }
        System.out.printf(
                Locale.ROOT,
                "%s, %d experts on every rank, %d moves: rows_total %d (%.3f per token),"
                        + " rows_recv_max %d, pairs_max_over_mean %.3f%n",
                w.name(),
                full,
                moves,
                rows,
                rows / (double) tokens,
                Arrays.stream(recv).max().orElse(0),
                Arrays.stream(pairs).max().orElse(0) * n / (double) ((long) tokens * k));
    }

    /** Moves one expert's tokens from rank {@code from} to {@code to}; the change in rows. */
    private static long shift(List<Integer> tokensOfExpert, int[][] onRank, int from, int to) {
        long delta = 0;
        for (int t : tokensOfExpert) {
            delta -= --onRank[t][from] == 0 ? 1 : 0;
            delta += onRank[t][to]++ == 0 ? 1 : 0;
        }
        return delta;
    }
}
