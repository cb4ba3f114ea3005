package moe.a2a.dispatch;

import java.util.Arrays;

/**
 * Replicas into ranks of a fixed number of slots, balanced by load per replica (even shares):
 * heaviest first, then pairwise swaps with the most loaded rank. The planner's first placement,
 * before shares are planned. Stateless.
 */
final class SlotPacking {
    private SlotPacking() {}

    /**
     * Replicas, heaviest per replica first, each to the least loaded rank with a free slot,
     * preferring ranks that do not host the expert yet.
     */
    static int[][] assign(double[] loads, int[] replicas, int ranks, int perRank) {
        int total = 0;
        for (int c : replicas) {
            total += c;
        }
        int[] items = new int[total];
        int k = 0;
        for (int e = 0; e < replicas.length; e++) {
            for (int i = 0; i < replicas[e]; i++) {
                items[k++] = e;
            }
        }
        Integer[] order = new Integer[total];
        for (int i = 0; i < total; i++) {
            order[i] = i;
        }
        Arrays.sort(
                order,
                (a, b) ->
                        Double.compare(
                                loads[items[b]] / replicas[items[b]],
                                loads[items[a]] / replicas[items[a]]));
        int[][] out = new int[ranks][perRank];
        int[] filled = new int[ranks];
        double[] load = new double[ranks];
        for (int i : order) {
            int e = items[i];
            int best = -1;
            boolean bestHosts = true;
            for (int r = 0; r < ranks; r++) {
                if (filled[r] == perRank) {
                    continue;
                }
                boolean hosts = contains(out[r], filled[r], e);
                if (best < 0
                        || (bestHosts && !hosts)
                        || (bestHosts == hosts && load[r] < load[best])) {
                    best = r;
                    bestHosts = hosts;
                }
            }
            out[best][filled[best]++] = e;
            load[best] += loads[e] / replicas[e];
        }
        return out;
    }

    /**
     * Swaps a slot of the most loaded rank with one of another rank while that lowers the larger of
     * the two ranks' loads below the most loaded rank's (even shares).
     */
    static void improveBySwaps(double[] loads, int[] replicas, int[][] rankExperts) {
        final int ranks = rankExperts.length;
        double[] load = new double[ranks];
        for (int r = 0; r < ranks; r++) {
            for (int e : rankExperts[r]) {
                load[r] += loads[e] / replicas[e];
            }
        }
        for (int round = 0; round < 100 * ranks; round++) {
            int top = 0;
            for (int r = 1; r < ranks; r++) {
                if (load[r] > load[top]) {
                    top = r;
                }
            }
            double bestPeak = load[top];
            int bestRank = -1;
            int bestI = -1;
            int bestJ = -1;
            for (int r = 0; r < ranks; r++) {
                if (r == top) {
                    continue;
                }
                for (int i = 0; i < rankExperts[top].length; i++) {
                    int x = rankExperts[top][i];
                    double wx = loads[x] / replicas[x];
                    for (int j = 0; j < rankExperts[r].length; j++) {
                        int y = rankExperts[r][j];
                        double wy = loads[y] / replicas[y];
                        if (x == y
                                || wy >= wx
                                || contains(rankExperts[r], rankExperts[r].length, x)
                                || contains(rankExperts[top], rankExperts[top].length, y)) {
                            continue;
                        }
                        double peak = Math.max(load[top] - wx + wy, load[r] - wy + wx);
                        if (peak < bestPeak - 1e-12 * (1 + bestPeak)) {
                            bestPeak = peak;
                            bestRank = r;
                            bestI = i;
                            bestJ = j;
                        }
                    }
                }
            }
            if (bestRank < 0) {
                return;
            }
            int x = rankExperts[top][bestI];
            int y = rankExperts[bestRank][bestJ];
            double delta = loads[x] / replicas[x] - loads[y] / replicas[y];
            rankExperts[top][bestI] = y;
            rankExperts[bestRank][bestJ] = x;
            load[top] -= delta;
            load[bestRank] += delta;
        }
    }

    private static boolean contains(int[] values, int length, int value) {
        for (int i = 0; i < length; i++) {
            if (values[i] == value) {
                return true;
            }
        }
        return false;
    }
}
