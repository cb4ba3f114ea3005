package moe.a2a.dispatch;

import java.util.Arrays;

/**
 * Where each logical expert lives: its replica's rank and local slot on that rank. This is the one
 * place that maps experts to ranks, so load balancing replaces a {@code Placement} and changes
 * nothing else. Currently one replica per expert. Immutable.
 */
public final class Placement {
    private final int numExperts;
    private final int worldSize;
    private final int[] expertRank;
    private final int[] expertSlot;
    private final int[][] rankExperts;

    private Placement(int numExperts, int worldSize, int[] expertRank, int[] expertSlot) {
        this.numExperts = numExperts;
        this.worldSize = worldSize;
        this.expertRank = expertRank;
        this.expertSlot = expertSlot;
        int[] slotsPerRank = new int[worldSize];
        for (int e = 0; e < numExperts; e++) {
            slotsPerRank[expertRank[e]]++;
        }
        this.rankExperts = new int[worldSize][];
        for (int r = 0; r < worldSize; r++) {
            rankExperts[r] = new int[slotsPerRank[r]];
        }
        for (int e = 0; e < numExperts; e++) {
            rankExperts[expertRank[e]][expertSlot[e]] = e;
        }
    }

    /**
     * Contiguous placement: rank {@code r} hosts experts {@code [r*E/N, (r+1)*E/N)} in order. With
     * {@code E < N} some ranks host none (they still take part in every step).
     */
    public static Placement contiguous(int numExperts, int worldSize) {
        if (numExperts <= 0) {
            throw new IllegalArgumentException("numExperts: " + numExperts + " (expected: > 0)");
        }
        if (worldSize <= 0) {
            throw new IllegalArgumentException("worldSize: " + worldSize + " (expected: > 0)");
        }
        int[] rank = new int[numExperts];
        int[] slot = new int[numExperts];
        for (int r = 0; r < worldSize; r++) {
            int first = (int) ((long) r * numExperts / worldSize);
            int end = (int) ((long) (r + 1) * numExperts / worldSize);
            for (int e = first; e < end; e++) {
                rank[e] = r;
                slot[e] = e - first;
            }
        }
        return new Placement(numExperts, worldSize, rank, slot);
    }

    public int numExperts() {
        return numExperts;
    }

    public int worldSize() {
        return worldSize;
    }

    /** The rank hosting the replica of {@code expert} that tokens are sent to. */
    public int rankOf(int expert) {
        return expertRank[expert];
    }

    /** The local slot of {@code expert} on {@link #rankOf}. */
    public int slotOf(int expert) {
        return expertSlot[expert];
    }

    /** Number of expert slots hosted by {@code rank}. */
    public int localExperts(int rank) {
        return rankExperts[rank].length;
    }

    /** The logical expert in {@code slot} of {@code rank}. */
    public int expertAt(int rank, int slot) {
        return rankExperts[rank][slot];
    }

    @Override
    public String toString() {
        return "Placement{numExperts="
                + numExperts
                + ", worldSize="
                + worldSize
                + ", expertRank="
                + Arrays.toString(expertRank)
                + "}";
    }
}
