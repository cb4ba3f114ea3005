package moe.a2a.dispatch;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/**
 * Co-activation-aware placement: from a recorded routing, moves the experts that have one slot
 * between ranks so that the experts tokens choose together share a rank, which lowers the rows
 * dispatch sends (a token travels once to each rank it visits). The rule between balance and rows:
 * balance first, then rows. Every rank's (token, expert) pairs stay within {@link #SLACK} of the
 * mean (or under the plan's own peak, when that is higher); within that, the search takes the
 * placement with the fewest rows it finds. Replicated experts and their shares stay where the
 * planner put them.
 *
 * <p>The search is simulated annealing over swaps of two single-slot experts on different ranks,
 * seeded, so the same routing gives the same placement. It counts rows and pairs in a model: a
 * single-slot expert's tokens all go to its rank, a replicated expert's go home when the home rank
 * hosts it, and otherwise follow the shares without adding rows. The result is then counted exactly
 * ({@link RoutingCost}, each source choosing as its dispatcher does) and kept only if it has fewer
 * rows than the plan and pairs within the bound. Stateless.
 */
public final class CoActivation {
    /** How far above the mean a rank's pairs may go to save rows. */
    public static final double SLACK = 0.05;

    /** Tokens the search models at most (every i-th token of the routing beyond that). */
    static final int MAX_TOKENS = 1 << 15;

    private CoActivation() {}

    /**
     * {@code plan} with single-slot experts moved between ranks for {@code ids}' co-activation, or
     * {@code plan} itself when the search finds nothing better.
     *
     * @param ids each source rank's {@code [T, K]} expert ids
     * @param moves swaps tried
     */
    public static PlacementPlanner.Plan refine(
            PlacementPlanner.Plan plan, int experts, int ranks, int[][] ids, int topK, long moves) {
        Search search = new Search(plan, experts, ranks, ids, topK);
        PlacementPlanner.Plan refined = search.run(moves);
        if (refined == plan) {
            return plan;
        }
        RoutingCost before = cost(plan, experts, ranks, ids, topK);
        RoutingCost after = cost(refined, experts, ranks, ids, topK);
        boolean balanced =
                after.pairsMaxOverMean() <= Math.max(1 + SLACK, before.pairsMaxOverMean());
        return balanced && after.rowsTotal() < before.rowsTotal() ? refined : plan;
    }

    /** What {@code ids} cost under {@code plan}, each source choosing as its dispatcher does. */
    public static RoutingCost cost(
            PlacementPlanner.Plan plan, int experts, int ranks, int[][] ids, int topK) {
        Placement placement = plan.placement(Placement.FIRST_VERSION, experts, ranks);
        DispatchLayout[] layouts = new DispatchLayout[ranks];
        for (int src = 0; src < ranks; src++) {
            layouts[src] = new DispatchLayout(placement, src);
            layouts[src].compute(ids[src], ids[src].length / topK, topK);
        }
        return RoutingCost.of(layouts);
    }

    /** The annealing state: where each single-slot expert is, and what that costs in the model. */
    private static final class Search {
        private final PlacementPlanner.Plan plan;
        private final int ranks;
        private final int perRank;
        private final int[] slotExpert;
        private final int[] singleSlots;
        private final int[][] tokensOf;
        private final byte[] onRank;
        private final double[] pairs;
        private final double limit;
        private long rows;

        Search(PlacementPlanner.Plan plan, int experts, int ranks, int[][] ids, int topK) {
            this.plan = plan;
            this.ranks = ranks;
            this.slotExpert = plan.slotExpert().clone();
            this.perRank = slotExpert.length / ranks;
            int[] replicas = new int[experts];
            double[] shareSum = new double[experts];
            for (int s = 0; s < slotExpert.length; s++) {
                replicas[slotExpert[s]]++;
                shareSum[slotExpert[s]] += plan.share()[s];
            }
            this.singleSlots =
                    IntStream.range(0, slotExpert.length)
                            .filter(s -> replicas[slotExpert[s]] == 1)
                            .toArray();
            long all = 0;
            for (int[] src : ids) {
                all += src.length / topK;
            }
            int stride = (int) Math.max(1, (all + MAX_TOKENS - 1) / MAX_TOKENS);
            int modelled = 0;
            for (int[] src : ids) {
                modelled += (src.length / topK + stride - 1) / stride;
            }
            this.onRank = new byte[modelled * ranks];
            this.pairs = new double[ranks];
            int[] count = new int[experts];
            int[][] chosen = new int[modelled][];
            int[] home = new int[modelled];
            int t = 0;
            for (int src = 0; src < ranks; src++) {
                for (int tok = 0; tok < ids[src].length / topK; tok += stride) {
                    chosen[t] = Arrays.copyOfRange(ids[src], tok * topK, tok * topK + topK);
                    home[t++] = src;
                }
            }
            boolean[][] hosts = new boolean[experts][ranks];
            for (int s = 0; s < slotExpert.length; s++) {
                hosts[slotExpert[s]][s / perRank] = true;
            }
            for (int i = 0; i < modelled; i++) {
                for (int e : chosen[i]) {
                    if (replicas[e] == 1) {
                        count[e]++;
                    } else if (hosts[e][home[i]]) {
                        onRank[i * ranks + home[i]]++;
                        pairs[home[i]]++;
                    } else {
                        for (int s = 0; s < slotExpert.length; s++) {
                            if (slotExpert[s] == e && shareSum[e] > 0) {
                                pairs[s / perRank] += plan.share()[s] / shareSum[e];
                            }
                        }
                    }
                }
            }
            this.tokensOf = new int[experts][];
            for (int e = 0; e < experts; e++) {
                tokensOf[e] = new int[count[e]];
                count[e] = 0;
            }
            for (int i = 0; i < modelled; i++) {
                for (int e : chosen[i]) {
                    if (replicas[e] == 1) {
                        tokensOf[e][count[e]++] = i;
                    }
                }
            }
            for (int s : singleSlots) {
                int r = s / perRank;
                for (int i : tokensOf[slotExpert[s]]) {
                    onRank[i * ranks + r]++;
                }
                pairs[r] += tokensOf[slotExpert[s]].length;
            }
            for (int i = 0; i < modelled; i++) {
                for (int r = 0; r < ranks; r++) {
                    rows += onRank[i * ranks + r] > 0 ? 1 : 0;
                }
            }
            double total = Arrays.stream(pairs).sum();
            this.limit =
                    Math.max((1 + SLACK) * total / ranks, Arrays.stream(pairs).max().orElse(0));
        }

        /** The best plan found in {@code moves} swaps, or the plan itself. */
        PlacementPlanner.Plan run(long moves) {
            if (singleSlots.length < 2 || ranks < 2) {
                return plan;
            }
            SplittableRandom random = new SplittableRandom(1);
            double perExpert = (double) onRank.length / ranks / Math.max(1, singleSlots.length);
            double temperature = Math.max(0.5, perExpert / 4);
            double cooling = Math.pow(0.01 / temperature, 1.0 / Math.max(1, moves));
            long start = rows;
            long best = rows;
            int[] bestSlots = slotExpert.clone();
            for (long m = 0; m < moves; m++) {
                int sa = singleSlots[random.nextInt(singleSlots.length)];
                int sb = singleSlots[random.nextInt(singleSlots.length)];
                int a = sa / perRank;
                int b = sb / perRank;
                temperature *= cooling;
                if (a == b) {
                    continue;
                }
                int[] ta = tokensOf[slotExpert[sa]];
                int[] tb = tokensOf[slotExpert[sb]];
                double pa = pairs[a] - ta.length + tb.length;
                double pb = pairs[b] + ta.length - tb.length;
                if ((pa > limit || pb > limit)
                        && Math.max(pa, pb) >= Math.max(pairs[a], pairs[b])) {
                    continue;
                }
                long delta = shift(ta, a, b) + shift(tb, b, a);
                if (delta <= 0 || random.nextDouble() < Math.exp(-delta / temperature)) {
                    rows += delta;
                    pairs[a] = pa;
                    pairs[b] = pb;
                    int e = slotExpert[sa];
                    slotExpert[sa] = slotExpert[sb];
                    slotExpert[sb] = e;
                    if (rows < best && pa <= limit && pb <= limit && withinLimit()) {
                        best = rows;
                        bestSlots = slotExpert.clone();
                    }
                } else {
                    shift(tb, a, b);
                    shift(ta, b, a);
                }
            }
            if (best >= start) {
                return plan;
            }
            return new PlacementPlanner.Plan(bestSlots, plan.share().clone());
        }

        private boolean withinLimit() {
            for (double p : pairs) {
                if (p > limit) {
                    return false;
                }
            }
            return true;
        }

        /** Moves one expert's tokens from rank {@code from} to {@code to}; the change in rows. */
        private long shift(int[] tokens, int from, int to) {
            long delta = 0;
            for (int i : tokens) {
                delta -= --onRank[i * ranks + from] == 0 ? 1 : 0;
                delta += onRank[i * ranks + to]++ == 0 ? 1 : 0;
            }
            return delta;
        }
    }
}
