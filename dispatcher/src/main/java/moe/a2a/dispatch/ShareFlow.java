package moe.a2a.dispatch;

import java.util.ArrayDeque;
import java.util.Arrays;

/**
 * Whether each expert's load can be spread over the ranks that host it so that no rank carries more
 * than a bound: a max flow (Dinic's algorithm) from the experts, through the ranks that host them,
 * to a sink that takes at most the bound from each rank. Stateless.
 */
final class ShareFlow {
    /** Flow short of the total by less than this fraction of it still counts as all routed. */
    private static final double SLACK = 1e-9;

    private ShareFlow() {}

    /**
     * The load of each expert on each rank ({@code [expert][rank]}) when every rank stays within
     * {@code bound}, or null when that is impossible.
     */
    static double[][] route(double[] loads, boolean[][] hosts, double bound) {
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
            g.add(experts + r, sink, bound);
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
