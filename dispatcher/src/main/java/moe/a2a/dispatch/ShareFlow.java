package moe.a2a.dispatch;

import java.util.ArrayDeque;
import java.util.Arrays;

/**
 * The shares of a placement's slots that give its most loaded rank the least load, as the
 * dispatcher routes ({@link RankLoadModel}): a hosting rank keeps its own tokens, so only the
 * tokens of ranks without a replica are the shares' to place. A bisection on the peak load, each
 * bound tested by a max flow (Dinic's algorithm) from the experts' placeable loads, through the
 * ranks that host them, to a sink that takes from each rank the bound less what it keeps.
 * Stateless.
 */
final class ShareFlow {
    /** Flow short of the total by less than this fraction of it still counts as all routed. */
    private static final double SLACK = 1e-9;

    /** Bisection steps on the bound: the bound is found to within 2^-40 of the total load. */
    private static final int BISECTION_STEPS = 40;

    private ShareFlow() {}

    /**
     * Shares that minimise the most loaded rank's load with the slots where they are, the experts'
     * tokens coming from {@code homes} ranks ({@link RankLoadModel}). An expert without load keeps
     * even shares.
     */
    static double[] shares(double[] loads, int experts, int[] slotExpert, int ranks, int homes) {
        final int[] slotRank = RankLoadModel.slotRanks(slotExpert.length, ranks);
        final int[][] slotsOn = RankLoadModel.slotsOn(ranks, slotRank, slotExpert, experts);
        final int[] hostCount = RankLoadModel.hostingRanks(slotsOn);
        boolean[][] hosts = new boolean[experts][ranks];
        double[] kept = new double[ranks];
        double[] placeable = new double[experts];
        double total = 0;
        for (int e = 0; e < experts; e++) {
            placeable[e] = RankLoadModel.flexible(homes, hostCount[e], loads[e]);
            total += placeable[e];
            for (int r = 0; r < ranks; r++) {
                hosts[e][r] = slotsOn[e][r] > 0;
                kept[r] += hosts[e][r] ? loads[e] / homes : 0;
            }
        }
        double[] share = new double[slotExpert.length];
        if (total == 0) {
            evenShares(slotExpert, experts, share);
            return share;
        }
        double lo = 0;
        double hi = 0;
        for (int r = 0; r < ranks; r++) {
            lo = Math.max(lo, kept[r]);
            hi = Math.max(hi, kept[r] + total);
        }
        double[][] flow = null;
        for (int step = 0; step < BISECTION_STEPS; step++) {
            double mid = (lo + hi) / 2;
            double[][] f = route(placeable, hosts, kept, mid);
            if (f != null) {
                hi = mid;
                flow = f;
            } else {
                lo = mid;
            }
        }
        if (flow == null) {
            flow = route(placeable, hosts, kept, hi);
        }
        // Normalised by what was routed, which the bisection leaves within SLACK of the load.
        double[] routed = new double[experts];
        for (int e = 0; e < experts; e++) {
            for (int r = 0; r < ranks; r++) {
                routed[e] += flow[e][r];
            }
        }
        for (int s = 0; s < slotExpert.length; s++) {
            int e = slotExpert[s];
            int r = slotRank[s];
            // an expert with nothing to place (no load, or a replica on every rank) keeps even
            // shares; a flow the float arithmetic left a hair below zero is none
            share[s] =
                    routed[e] == 0
                            ? 1.0 / Arrays.stream(slotsOn[e]).sum()
                            : Math.max(0, flow[e][r]) / routed[e] / slotsOn[e][r];
        }
        return share;
    }

    /** Into {@code share}: each slot's expert's tokens split evenly over its slots. */
    static void evenShares(int[] slotExpert, int experts, double[] share) {
        int[] count = new int[experts];
        for (int e : slotExpert) {
            count[e]++;
        }
        for (int s = 0; s < slotExpert.length; s++) {
            share[s] = 1.0 / count[slotExpert[s]];
        }
    }

    /**
     * The placeable load of each expert on each rank ({@code [expert][rank]}) when every rank, with
     * what it {@code kept}, stays within {@code bound}; null when that is impossible.
     */
    static double[][] route(double[] loads, boolean[][] hosts, double[] kept, double bound) {
        final int experts = loads.length;
        final int ranks = hosts[0].length;
        final int source = experts + ranks;
        final int sink = source + 1;
        Graph g = new Graph(sink + 1);
        double total = 0;
        int[][] edge = new int[experts][ranks];
        for (int e = 0; e < experts; e++) {
            g.add(source, e, loads[e]);
            total += loads[e];
            for (int r = 0; r < ranks; r++) {
                edge[e][r] = hosts[e][r] ? g.add(e, experts + r, loads[e]) : -1;
            }
        }
        for (int r = 0; r < ranks; r++) {
            if (kept[r] > bound) {
                return null;
            }
            g.add(experts + r, sink, bound - kept[r]);
        }
        double routed = g.maxFlow(source, sink);
        if (routed < total * (1 - SLACK)) {
            return null;
        }
        double[][] flow = new double[experts][ranks];
        for (int e = 0; e < experts; e++) {
            for (int r = 0; r < ranks; r++) {
                flow[e][r] = edge[e][r] < 0 ? 0 : g.flow(edge[e][r]);
            }
        }
        return flow;
    }

    /** A flow network in edge arrays; edge {@code i ^ 1} is edge {@code i}'s reverse. */
    private static final class Graph {
        private final int[] head;
        private int[] next = new int[16];
        private int[] to = new int[16];
        private double[] capacity = new double[16];
        private double[] initial = new double[16];
        private int edges;
        private final int[] level;
        private final int[] cursor;

        Graph(int nodes) {
            head = new int[nodes];
            Arrays.fill(head, -1);
            level = new int[nodes];
            cursor = new int[nodes];
        }

        int add(int from, int target, double cap) {
            int id = edges;
            link(from, target, cap);
            link(target, from, 0);
            return id;
        }

        double flow(int edge) {
            return initial[edge] - capacity[edge];
        }

        private void link(int from, int target, double cap) {
            if (edges == to.length) {
                next = Arrays.copyOf(next, edges * 2);
                to = Arrays.copyOf(to, edges * 2);
                capacity = Arrays.copyOf(capacity, edges * 2);
                initial = Arrays.copyOf(initial, edges * 2);
            }
            to[edges] = target;
            capacity[edges] = cap;
            initial[edges] = cap;
            next[edges] = head[from];
            head[from] = edges++;
        }

        double maxFlow(int source, int sink) {
            double total = 0;
            while (levels(source, sink)) {
                System.arraycopy(head, 0, cursor, 0, head.length);
                double pushed;
                while ((pushed = push(source, sink, Double.MAX_VALUE)) > 0) {
                    total += pushed;
                }
            }
            return total;
        }

        private boolean levels(int source, int sink) {
            Arrays.fill(level, -1);
            level[source] = 0;
            ArrayDeque<Integer> queue = new ArrayDeque<>();
            queue.add(source);
            while (!queue.isEmpty()) {
                int v = queue.poll();
                for (int e = head[v]; e >= 0; e = next[e]) {
                    if (capacity[e] > 0 && level[to[e]] < 0) {
                        level[to[e]] = level[v] + 1;
                        queue.add(to[e]);
                    }
                }
            }
            return level[sink] >= 0;
        }

        private double push(int v, int sink, double limit) {
            if (v == sink) {
                return limit;
            }
            for (; cursor[v] >= 0; cursor[v] = next[cursor[v]]) {
                int e = cursor[v];
                int w = to[e];
                if (capacity[e] > 0 && level[w] == level[v] + 1) {
                    double got = push(w, sink, Math.min(limit, capacity[e]));
                    if (got > 0) {
                        capacity[e] -= got;
                        capacity[e ^ 1] += got;
                        return got;
                    }
                }
            }
            return 0;
        }
    }
}
