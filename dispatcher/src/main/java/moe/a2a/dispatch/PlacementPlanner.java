package moe.a2a.dispatch;

import java.util.Arrays;

/**
 * Decides, from measured expert loads, which logical expert each of {@code P} physical slots hosts
 * and what share of its expert's tokens each slot takes, so that the most loaded rank carries as
 * little as possible. Slot {@code s} lives on rank {@code s / (P / N)}. A rank's load is the sum
 * over its slots of share × the slot's expert's load.
 *
 * <p>Steps, for each node (all ranks form one node unless groups are packed to nodes first):
 *
 * <ol>
 *   <li>replica counts: each extra slot goes to the expert with the highest load per replica that
 *       is not yet on every rank, or, for a last part of them, to the lightest such expert; steps 2
 *       to 5 run for five such splits and the lowest peak wins;
 *   <li>placement: replicas, heaviest first, each to the least loaded rank with a free slot that
 *       does not host that expert yet; then pairs of slots are swapped between the most loaded rank
 *       and the others while that lowers the most loaded rank's load (even shares; {@link
 *       SlotPacking});
 *   <li>shares: the smallest load the most loaded rank can have with the slots where they are,
 *       found by bisection over a max-flow feasibility test (expert → ranks hosting it → sink with
 *       the bound as capacity); each expert's flow into a rank, split evenly over its slots there,
 *       is the slots' share ({@link ShareFlow});
 *   <li>swaps again, now judged by what the slots carry under those shares, each kept only if the
 *       peak with shares found again is lower;
 *   <li>the shares moved toward even as far as keeps the peak within 2 % of that: even shares let
 *       the dispatcher keep a token's rows on the ranks it already visits.
 * </ol>
 *
 * Loads are as the dispatcher routes ({@link RankLoadModel}): a rank hosting an expert keeps its
 * own tokens of it, and shares place the tokens of the ranks without a replica.
 *
 * <p>With {@code nodes > 1} the {@code groups} expert groups are first packed to nodes (equal
 * counts, balanced the same way by group load), and each node's experts get the node's slots and
 * ranks, so that no replica leaves its group's node. Stateless.
 */
public final class PlacementPlanner {
    /** How much above the optimised peak the final shares may go to be more even. */
    static final double EVEN_SLACK = 0.02;

    /** How many splits of the extra slots between hot and light experts {@link #planNode} tries. */
    private static final int HEAVY_SPLITS = 5;

    /** Blends of even and optimised shares tried, most even first. */
    private static final double[] EVEN_STEPS = {1, 0.75, 0.5, 0.25};

    private PlacementPlanner() {}

    /**
     * One layer's plan: {@code slotExpert[s]} is the logical expert of slot s, {@code share[s]} its
     * share.
     */
    public record Plan(int[] slotExpert, double[] share) {

        /** This plan as a {@link Placement} of {@code experts} over {@code ranks}. */
        public Placement placement(long version, int experts, int ranks) {
            int perRank = slotExpert.length / ranks;
            int[][] rankExperts = new int[ranks][perRank];
            double[][] rankShares = new double[ranks][perRank];
            for (int s = 0; s < slotExpert.length; s++) {
                rankExperts[s / perRank][s % perRank] = slotExpert[s];
                rankShares[s / perRank][s % perRank] = share[s];
            }
            return Placement.of(version, experts, rankExperts, rankShares);
        }

        /** Each rank's load under this plan, as the dispatcher routes ({@link RankLoadModel}). */
        public double[] rankLoads(double[] loads, int ranks) {
            return rankLoads(loads, ranks, ranks);
        }

        /** As {@link #rankLoads(double[], int)}, the experts' tokens coming from {@code homes}. */
        double[] rankLoads(double[] loads, int ranks, int homes) {
            return RankLoadModel.rankLoads(
                    ranks,
                    homes,
                    RankLoadModel.slotRanks(slotExpert.length, ranks),
                    slotExpert,
                    share,
                    loads);
        }
    }

    /**
     * Plans one layer.
     *
     * @param loads load of each logical expert (tokens routed to it), not negative
     * @param ranks N
     * @param slots P, a multiple of N and at least the number of experts
     * @param nodes M, dividing N and {@code groups}; 1 for a single node
     * @param groups G, dividing the number of experts; ignored when {@code nodes} is 1
     * @throws IllegalArgumentException naming the argument that does not fit
     */
    public static Plan plan(double[] loads, int ranks, int slots, int nodes, int groups) {
        final int experts = loads.length;
        check(experts > 0, "loads: empty (expected: one load per logical expert)");
        for (int e = 0; e < experts; e++) {
            check(
                    loads[e] >= 0 && Double.isFinite(loads[e]),
                    "loads[" + e + "]: " + loads[e] + " (expected: finite, >= 0)");
        }
        check(ranks > 0, "ranks: " + ranks + " (expected: > 0)");
        check(
                slots >= experts && slots % ranks == 0,
                "slots: "
                        + slots
                        + " (expected: a multiple of ranks="
                        + ranks
                        + ", >= experts="
                        + experts
                        + ")");
        check(
                nodes > 0 && ranks % nodes == 0,
                "nodes: " + nodes + " (expected: > 0, dividing ranks=" + ranks + ")");
        if (nodes == 1) {
            return planNode(loads, ranks, slots, ranks);
        }
        check(
                groups > 0 && experts % groups == 0 && groups % nodes == 0,
                "groups: "
                        + groups
                        + " (expected: dividing experts="
                        + experts
                        + ", a multiple of nodes="
                        + nodes
                        + ")");
        final int groupSize = experts / groups;
        final int nodeExperts = experts / nodes;
        final int nodeSlots = slots / nodes;
        check(
                nodeSlots >= nodeExperts,
                "slots: " + slots + " (expected: >= experts, node by node)");
        double[] groupLoads = new double[groups];
        for (int e = 0; e < experts; e++) {
            groupLoads[e / groupSize] += loads[e];
        }
        int[][] nodeGroups = pack(groupLoads, nodes);
        int[] slotExpert = new int[slots];
        double[] share = new double[slots];
        for (int n = 0; n < nodes; n++) {
            int[] members = new int[nodeExperts];
            double[] memberLoads = new double[nodeExperts];
            int m = 0;
            for (int g : nodeGroups[n]) {
                for (int e = g * groupSize; e < (g + 1) * groupSize; e++) {
                    members[m] = e;
                    memberLoads[m++] = loads[e];
                }
            }
            // the node's experts take tokens from every rank, not only the node's
            Plan local = planNode(memberLoads, ranks / nodes, nodeSlots, ranks);
            for (int s = 0; s < nodeSlots; s++) {
                slotExpert[n * nodeSlots + s] = members[local.slotExpert()[s]];
                share[n * nodeSlots + s] = local.share()[s];
            }
        }
        return new Plan(slotExpert, share);
    }

    /**
     * The plan of one node: its experts' {@code loads} over its ranks and slots. A rank keeps its
     * own tokens of every expert it hosts, so a replica of a hot expert fixes part of its load
     * where it lands, and the best balance does not always come from replicating the hottest
     * experts. Several splits are planned (the first {@code heavy} extra slots by load per replica,
     * the rest to the lightest experts); of those whose peak is within {@link #EVEN_SLACK} of the
     * lowest, the one that keeps the most load on its home ranks wins: a token whose experts are at
     * home crosses to fewer ranks. The experts' tokens come from {@code homes} ranks: the node's
     * {@code ranks} and the other nodes' ranks.
     */
    private static Plan planNode(double[] loads, int ranks, int slots, int homes) {
        final int extra = slots - loads.length;
        final Plan[] plans = new Plan[HEAVY_SPLITS];
        double lowest = Double.MAX_VALUE;
        for (int step = 0; step < HEAVY_SPLITS; step++) {
            final int heavy = extra - extra * step / (HEAVY_SPLITS - 1);
            plans[step] =
                    planReplicas(
                            loads, ranks, slots, replicaCounts(loads, slots, ranks, heavy), homes);
            lowest = Math.min(lowest, peak(plans[step], loads, ranks, homes));
        }
        Plan best = null;
        double bestKept = -1;
        for (Plan plan : plans) {
            final double kept = keptHome(plan, loads, ranks, homes);
            if (peak(plan, loads, ranks, homes) <= lowest * (1 + EVEN_SLACK) && kept > bestKept) {
                best = plan;
                bestKept = kept;
            }
        }
        return best;
    }

    /** The load that stays on its home ranks: each expert's, times its hosting ranks over N. */
    private static double keptHome(Plan plan, double[] loads, int ranks, int homes) {
        final int[] hosts =
                RankLoadModel.hostingRanks(
                        RankLoadModel.slotsOn(
                                ranks,
                                RankLoadModel.slotRanks(plan.slotExpert().length, ranks),
                                plan.slotExpert(),
                                loads.length));
        double kept = 0;
        for (int e = 0; e < loads.length; e++) {
            kept += loads[e] * hosts[e] / homes;
        }
        return kept;
    }

    /** The plan of one node with {@code replicas} slots per expert. */
    private static Plan planReplicas(
            double[] loads, int ranks, int slots, int[] replicas, int homes) {
        int perRank = slots / ranks;
        int[][] rankExperts = SlotPacking.assign(loads, replicas, ranks, perRank);
        Plan assigned = withShares(loads, rankExperts, homes);
        SlotPacking.improveBySwaps(loads, replicas, rankExperts);
        Plan swapped = withShares(loads, rankExperts, homes);
        // The swaps judge by even shares; keep them only if they help once shares are optimised.
        Plan best =
                peak(swapped, loads, ranks, homes) < peak(assigned, loads, ranks, homes)
                        ? swapped
                        : assigned;
        return evener(loads, improveWithShares(loads, best, ranks, homes), ranks, homes);
    }

    /**
     * The plan with its shares moved as far toward even as keeps its peak within {@link
     * #EVEN_SLACK} of the optimised one: optimal shares sit at corners (a replica takes all or
     * nothing of the others' tokens), which leaves the dispatcher no room to keep a token's rows on
     * the ranks it already visits ({@link ReplicaChoice}).
     */
    private static Plan evener(double[] loads, Plan plan, int ranks, int homes) {
        final double limit = peak(plan, loads, ranks, homes) * (1 + EVEN_SLACK);
        final int slots = plan.slotExpert().length;
        final double[] even = new double[slots];
        ShareFlow.evenShares(plan.slotExpert(), loads.length, even);
        for (double toward : EVEN_STEPS) {
            final double[] share = new double[slots];
            for (int s = 0; s < slots; s++) {
                share[s] = toward * even[s] + (1 - toward) * plan.share()[s];
            }
            final Plan blended = new Plan(plan.slotExpert(), share);
            if (peak(blended, loads, ranks, homes) <= limit) {
                return blended;
            }
        }
        return plan;
    }

    /**
     * Swaps slots between the most loaded rank and another while the peak, with shares optimised
     * again after each swap, goes down. A swap is chosen by what the two slots carry under the
     * current shares, then kept only if the re-optimised peak is lower.
     */
    private static Plan improveWithShares(double[] loads, Plan start, int ranks, int homes) {
        Plan plan = start;
        double peak = peak(plan, loads, ranks, homes);
        final int slots = plan.slotExpert().length;
        final int perRank = slots / ranks;
        for (int round = 0; round < 4 * ranks; round++) {
            double[] carried =
                    RankLoadModel.slotLoads(
                            ranks,
                            homes,
                            RankLoadModel.slotRanks(slots, ranks),
                            plan.slotExpert(),
                            plan.share(),
                            loads);
            double[] rankLoad = new double[ranks];
            for (int s = 0; s < slots; s++) {
                rankLoad[s / perRank] += carried[s];
            }
            int top = 0;
            for (int r = 1; r < ranks; r++) {
                if (rankLoad[r] > rankLoad[top]) {
                    top = r;
                }
            }
            int[] slotExpert = plan.slotExpert();
            double bestEstimate = rankLoad[top];
            int bestI = -1;
            int bestJ = -1;
            for (int i = top * perRank; i < (top + 1) * perRank; i++) {
                for (int j = 0; j < slots; j++) {
                    int r = j / perRank;
                    if (r == top
                            || carried[j] >= carried[i]
                            || hostsOn(slotExpert, r, perRank, slotExpert[i])
                            || hostsOn(slotExpert, top, perRank, slotExpert[j])) {
                        continue;
                    }
                    double estimate =
                            Math.max(
                                    rankLoad[top] - carried[i] + carried[j],
                                    rankLoad[r] - carried[j] + carried[i]);
                    if (estimate < bestEstimate) {
                        bestEstimate = estimate;
                        bestI = i;
                        bestJ = j;
                    }
                }
            }
            if (bestI < 0) {
                return plan;
            }
            int[] next = slotExpert.clone();
            next[bestI] = slotExpert[bestJ];
            next[bestJ] = slotExpert[bestI];
            Plan candidate =
                    new Plan(next, ShareFlow.shares(loads, loads.length, next, ranks, homes));
            double candidatePeak = peak(candidate, loads, ranks, homes);
            if (candidatePeak >= peak * (1 - 1e-9)) {
                return plan;
            }
            plan = candidate;
            peak = candidatePeak;
        }
        return plan;
    }

    private static boolean hostsOn(int[] slotExpert, int rank, int perRank, int expert) {
        for (int s = rank * perRank; s < (rank + 1) * perRank; s++) {
            if (slotExpert[s] == expert) {
                return true;
            }
        }
        return false;
    }

    private static Plan withShares(double[] loads, int[][] rankExperts, int homes) {
        int perRank = rankExperts[0].length;
        int[] slotExpert = new int[rankExperts.length * perRank];
        for (int r = 0; r < rankExperts.length; r++) {
            System.arraycopy(rankExperts[r], 0, slotExpert, r * perRank, perRank);
        }
        return new Plan(
                slotExpert,
                ShareFlow.shares(loads, loads.length, slotExpert, rankExperts.length, homes));
    }

    private static double peak(Plan plan, double[] loads, int ranks, int homes) {
        return Arrays.stream(plan.rankLoads(loads, ranks, homes)).max().orElse(0);
    }

    /**
     * Extra slots, one at a time: the first {@code heavy} to the expert with the highest load per
     * replica, the others to the lightest expert, each among those on fewer than all ranks (a
     * second replica on one rank adds nothing that shares cannot do).
     */
    static int[] replicaCounts(double[] loads, int slots, int ranks, int heavy) {
        int[] count = new int[loads.length];
        Arrays.fill(count, 1);
        for (int extra = 0; extra < slots - loads.length; extra++) {
            int best = -1;
            for (int e = 0; e < loads.length; e++) {
                if (count[e] < ranks
                        && (best < 0 || better(loads, count, e, best, extra < heavy))) {
                    best = e;
                }
            }
            count[best < 0 ? extra % loads.length : best]++;
        }
        return count;
    }

    private static boolean better(double[] loads, int[] count, int e, int than, boolean heavy) {
        return heavy
                ? loads[e] / count[e] > loads[than] / count[than]
                : loads[e] * count[e] < loads[than] * count[than];
    }

    /** Groups (by load) to {@code packs} packs of equal count: heaviest first, then swaps. */
    private static int[][] pack(double[] loads, int packs) {
        int[] ones = new int[loads.length];
        Arrays.fill(ones, 1);
        int[][] packed = SlotPacking.assign(loads, ones, packs, loads.length / packs);
        SlotPacking.improveBySwaps(loads, ones, packed);
        return packed;
    }

    private static void check(boolean ok, String message) {
        if (!ok) {
            throw new IllegalArgumentException(message);
        }
    }
}
