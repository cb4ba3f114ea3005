package moe.a2a.dispatch;

/**
 * Each rank's load under a placement as the dispatcher routes tokens ({@link ReplicaChoice}): every
 * rank is home to an equal part of each expert's tokens; a rank that hosts the expert keeps its own
 * part, and the parts of the ranks without a replica split over the replicas by their shares. So a
 * replica carries {@code load / N} of its own rank's tokens plus {@code share × load × (N - m) /
 * N}, {@code m} being the ranks that host the expert: with even shares, {@code load / m}. The ranks
 * modelled may be some of the N homes (one node's, when the planner places a node's experts on its
 * ranks): then {@code homes} is N and the ranks are the node's. Stateless.
 */
final class RankLoadModel {
    private RankLoadModel() {}

    /**
     * @param ranks the ranks modelled
     * @param homes N, the ranks every expert's tokens come from ({@code ranks} or more)
     * @param slotRank the rank of each slot
     * @param slotExpert the expert of each slot
     * @param share each slot's share of its expert's tokens from ranks without a replica (an
     *     expert's shares add up to 1)
     * @param loads each expert's load, all ranks' tokens together
     */
    static double[] rankLoads(
            int ranks,
            int homes,
            int[] slotRank,
            int[] slotExpert,
            double[] share,
            double[] loads) {
        final double[] carried = slotLoads(ranks, homes, slotRank, slotExpert, share, loads);
        final double[] out = new double[ranks];
        for (int s = 0; s < carried.length; s++) {
            out[slotRank[s]] += carried[s];
        }
        return out;
    }

    /** What each slot carries; arguments as {@link #rankLoads}. */
    static double[] slotLoads(
            int ranks,
            int homes,
            int[] slotRank,
            int[] slotExpert,
            double[] share,
            double[] loads) {
        final int[][] slotsOn = slotsOn(ranks, slotRank, slotExpert, loads.length);
        final int[] hosts = hostingRanks(slotsOn);
        final double[] carried = new double[slotExpert.length];
        for (int s = 0; s < slotExpert.length; s++) {
            final int e = slotExpert[s];
            carried[s] =
                    loads[e] * homePart(homes, slotsOn[e][slotRank[s]])
                            + share[s] * flexible(homes, hosts[e], loads[e]);
        }
        return carried;
    }

    /** The rank of each of {@code slots} slots spread evenly over {@code ranks}, in rank order. */
    static int[] slotRanks(int slots, int ranks) {
        final int[] slotRank = new int[slots];
        for (int s = 0; s < slots; s++) {
            slotRank[s] = s / (slots / ranks);
        }
        return slotRank;
    }

    /** {@code [expert][rank]}: the expert's slots on the rank. */
    static int[][] slotsOn(int ranks, int[] slotRank, int[] slotExpert, int experts) {
        final int[][] on = new int[experts][ranks];
        for (int s = 0; s < slotExpert.length; s++) {
            on[slotExpert[s]][slotRank[s]]++;
        }
        return on;
    }

    /** Per expert: the ranks that host it. */
    static int[] hostingRanks(int[][] slotsOn) {
        final int[] hosts = new int[slotsOn.length];
        for (int e = 0; e < slotsOn.length; e++) {
            for (int count : slotsOn[e]) {
                hosts[e] += count > 0 ? 1 : 0;
            }
        }
        return hosts;
    }

    /** The part of an expert's load that one of its slots on a hosting rank keeps: its home's. */
    static double homePart(int homes, int slotsOnRank) {
        return 1.0 / homes / slotsOnRank;
    }

    /** The load of an expert hosted on {@code hosts} ranks that its shares place: other homes'. */
    static double flexible(int homes, int hosts, double load) {
        return load * (homes - hosts) / homes;
    }
}
