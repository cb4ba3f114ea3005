package moe.a2a.dispatch;

import java.util.Arrays;

/**
 * Where each logical expert lives: its replica's rank and local slot on that rank. This is the one
 * place that maps experts to ranks, so load balancing replaces a {@code Placement} and changes
 * nothing else. The coordinator decides it and numbers each one it decides ({@link #version}).
 * Currently one replica per expert. Immutable.
 */
public final class Placement {
    /** The version of a cluster's first placement. */
    public static final long FIRST_VERSION = 1;

    private final long version;
    private final int numExperts;
    private final int worldSize;
    private final int[] expertRank;
    private final int[] expertSlot;
    private final int[][] rankExperts;

    private Placement(
            long version, int numExperts, int worldSize, int[] expertRank, int[] expertSlot) {
        this.version = version;
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
        return new Placement(FIRST_VERSION, numExperts, worldSize, rank, slot);
    }

    /**
     * The placement whose rank {@code r} hosts logical expert {@code rankExperts[r][s]} in its slot
     * {@code s}. Every expert in {@code [0, numExperts)} must be in exactly one slot.
     *
     * @throws IllegalArgumentException naming the first slot or expert that breaks this
     */
    public static Placement of(long version, int numExperts, int[][] rankExperts) {
        if (numExperts <= 0) {
            throw new IllegalArgumentException("numExperts: " + numExperts + " (expected: > 0)");
        }
        if (rankExperts.length == 0) {
            throw new IllegalArgumentException("ranks: 0 (expected: > 0)");
        }
        int[] rank = new int[numExperts];
        int[] slot = new int[numExperts];
        Arrays.fill(rank, -1);
        for (int r = 0; r < rankExperts.length; r++) {
            for (int s = 0; s < rankExperts[r].length; s++) {
                int e = rankExperts[r][s];
                if (e < 0 || e >= numExperts) {
                    throw new IllegalArgumentException(
                            "ranks["
                                    + r
                                    + "].experts["
                                    + s
                                    + "]: "
                                    + e
                                    + " (expected: in [0, "
                                    + numExperts
                                    + "))");
                }
                if (rank[e] >= 0) {
                    throw new IllegalArgumentException(
                            "ranks["
                                    + r
                                    + "].experts["
                                    + s
                                    + "]: expert "
                                    + e
                                    + " is already in ranks["
                                    + rank[e]
                                    + "].experts["
                                    + slot[e]
                                    + "] (expected: one slot per expert)");
                }
                rank[e] = r;
                slot[e] = s;
            }
        }
        for (int e = 0; e < numExperts; e++) {
            if (rank[e] < 0) {
                throw new IllegalArgumentException(
                        "ranks: expert " + e + " is in no slot (expected: every expert in one)");
            }
        }
        return new Placement(version, numExperts, rankExperts.length, rank, slot);
    }

    /** Which of the coordinator's placements this is; a later one has a higher version. */
    public long version() {
        return version;
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

    /** The logical experts in {@code rank}'s slots, in slot order (a copy). */
    public int[] expertsOf(int rank) {
        return rankExperts[rank].clone();
    }

    @Override
    public String toString() {
        return "Placement{version="
                + version
                + ", numExperts="
                + numExperts
                + ", worldSize="
                + worldSize
                + ", expertRank="
                + Arrays.toString(expertRank)
                + "}";
    }
}
