package moe.a2a.dispatch;

import java.util.Arrays;

/**
 * Going from one placement to the next: ranks are interchangeable in a plan, so the next
 * placement's ranks are matched to the current ones that already host most of their experts, and
 * only the slots whose expert a rank lacks need weights loaded. Stateless.
 */
public final class PlacementMove {
    private PlacementMove() {}

    /**
     * {@code next}, its ranks relabelled so that each keeps as many of its current experts as a
     * greedy matching finds (the pair of ranks sharing the most experts first), or as they are when
     * that keeps as many, as version {@code version}. Slot order inside a rank is kept: weights are
     * reused by expert, not by slot.
     *
     * @throws IllegalArgumentException when the placements differ in world size or experts
     */
    public static Placement aligned(Placement current, Placement next, long version) {
        final int n = current.worldSize();
        if (next.worldSize() != n || next.numExperts() != current.numExperts()) {
            throw new IllegalArgumentException(
                    "next: "
                            + next.worldSize()
                            + " ranks, "
                            + next.numExperts()
                            + " experts (expected: "
                            + n
                            + " ranks, "
                            + current.numExperts()
                            + " experts, as the current placement)");
        }
        int[][] overlap = new int[n][n];
        for (int from = 0; from < n; from++) {
            for (int to = 0; to < n; to++) {
                overlap[from][to] = kept(current.expertsOf(to), next.expertsOf(from));
            }
        }
        int[] target = new int[n];
        Arrays.fill(target, -1);
        boolean[] taken = new boolean[n];
        for (int round = 0; round < n; round++) {
            int bestFrom = -1;
            int bestTo = -1;
            for (int from = 0; from < n; from++) {
                if (target[from] >= 0) {
                    continue;
                }
                for (int to = 0; to < n; to++) {
                    if (!taken[to]
                            && (bestFrom < 0 || overlap[from][to] > overlap[bestFrom][bestTo])) {
                        bestFrom = from;
                        bestTo = to;
                    }
                }
            }
            target[bestFrom] = bestTo;
            taken[bestTo] = true;
        }
        // greedy matching is not optimal: never keep fewer experts than leaving the ranks as they
        // are
        int greedyKept = 0;
        int identityKept = 0;
        for (int from = 0; from < n; from++) {
            greedyKept += overlap[from][target[from]];
            identityKept += overlap[from][from];
        }
        if (identityKept >= greedyKept) {
            Arrays.setAll(target, from -> from);
        }
        int[][] experts = new int[n][];
        double[][] shares = new double[n][];
        for (int from = 0; from < n; from++) {
            experts[target[from]] = next.expertsOf(from);
            shares[target[from]] = next.sharesOf(from);
        }
        return Placement.of(version, next.numExperts(), experts, shares);
    }

    /**
     * The experts {@code rank} hosts under {@code next} and not under {@code current}: the weights
     * it must load, each once however many slots it fills. Ascending.
     */
    public static int[] newExperts(Placement current, Placement next, int rank) {
        int[] now = current.expertsOf(rank);
        Arrays.sort(now);
        return Arrays.stream(next.expertsOf(rank))
                .distinct()
                .filter(e -> Arrays.binarySearch(now, e) < 0)
                .sorted()
                .toArray();
    }

    /** How many of {@code then}'s experts {@code now} already holds (as multisets). */
    private static int kept(int[] now, int[] then) {
        int[] a = now.clone();
        int[] b = then.clone();
        Arrays.sort(a);
        Arrays.sort(b);
        int i = 0;
        int j = 0;
        int common = 0;
        while (i < a.length && j < b.length) {
            if (a[i] == b[j]) {
                common++;
                i++;
                j++;
            } else if (a[i] < b[j]) {
                i++;
            } else {
                j++;
            }
        }
        return common;
    }
}
