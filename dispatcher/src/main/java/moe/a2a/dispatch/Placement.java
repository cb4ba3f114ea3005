package moe.a2a.dispatch;

import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * Where each logical expert lives: the physical slots of every rank, each hosting one logical
 * expert, and each slot's share of its expert's tokens. An expert in several slots has replicas;
 * {@link DispatchLayout} chooses one per token. This is the one place that maps experts to ranks,
 * so load balancing replaces a {@code Placement} and changes nothing else. The coordinator decides
 * it and numbers each one it decides ({@link #version}). Immutable.
 */
public final class Placement {
    /** The version of a cluster's first placement. */
    public static final long FIRST_VERSION = 1;

    private final long version;
    private final int numExperts;
    private final int[][] rankExperts;
    private final double[][] rankShares;
    private final int[][] replicaRank;
    private final int[][] replicaSlot;
    private final double[][] replicaShare;

    private Placement(long version, int numExperts, int[][] rankExperts, double[][] rankShares) {
        this.version = version;
        this.numExperts = numExperts;
        this.rankExperts = rankExperts;
        this.rankShares = rankShares;
        int[] count = new int[numExperts];
        for (int[] slots : rankExperts) {
            for (int e : slots) {
                count[e]++;
            }
        }
        this.replicaRank = new int[numExperts][];
        this.replicaSlot = new int[numExperts][];
        this.replicaShare = new double[numExperts][];
        for (int e = 0; e < numExperts; e++) {
            replicaRank[e] = new int[count[e]];
            replicaSlot[e] = new int[count[e]];
            replicaShare[e] = new double[count[e]];
        }
        int[] next = new int[numExperts];
        for (int r = 0; r < rankExperts.length; r++) {
            for (int s = 0; s < rankExperts[r].length; s++) {
                int e = rankExperts[r][s];
                replicaRank[e][next[e]] = r;
                replicaSlot[e][next[e]] = s;
                replicaShare[e][next[e]++] = rankShares[r][s];
            }
        }
    }

    /**
     * Contiguous placement: rank {@code r} hosts experts {@code [r*E/N, (r+1)*E/N)} in order, one
     * slot each. With {@code E < N} some ranks host none (they still take part in every step).
     */
    public static Placement contiguous(int numExperts, int worldSize) {
        if (numExperts <= 0) {
            throw new IllegalArgumentException("numExperts: " + numExperts + " (expected: > 0)");
        }
        if (worldSize <= 0) {
            throw new IllegalArgumentException("worldSize: " + worldSize + " (expected: > 0)");
        }
        int[][] rankExperts = new int[worldSize][];
        for (int r = 0; r < worldSize; r++) {
            int first = (int) ((long) r * numExperts / worldSize);
            int end = (int) ((long) (r + 1) * numExperts / worldSize);
            rankExperts[r] = new int[end - first];
            for (int e = first; e < end; e++) {
                rankExperts[r][e - first] = e;
            }
        }
        return of(FIRST_VERSION, numExperts, rankExperts);
    }

    /**
     * The placement whose rank {@code r} hosts logical expert {@code rankExperts[r][s]} in its slot
     * {@code s}, the replicas of an expert taking even shares.
     *
     * @throws IllegalArgumentException naming the first slot or expert that does not fit
     */
    public static Placement of(long version, int numExperts, int[][] rankExperts) {
        int[] count = new int[Math.max(0, numExperts)];
        checkSlots(numExperts, rankExperts, count);
        double[][] shares = new double[rankExperts.length][];
        for (int r = 0; r < rankExperts.length; r++) {
            shares[r] = new double[rankExperts[r].length];
            for (int s = 0; s < shares[r].length; s++) {
                shares[r][s] = 1.0 / count[rankExperts[r][s]];
            }
        }
        return new Placement(version, numExperts, copy(rankExperts), shares);
    }

    /**
     * As {@link #of(long, int, int[][])}, with the share of each slot: {@code rankShares[r][s]},
     * not negative; an expert's shares are scaled to add up to 1, and must not all be 0.
     */
    public static Placement of(
            long version, int numExperts, int[][] rankExperts, double[][] rankShares) {
        int[] count = new int[Math.max(0, numExperts)];
        checkSlots(numExperts, rankExperts, count);
        if (rankShares.length != rankExperts.length) {
            throw new IllegalArgumentException(
                    "shares: "
                            + rankShares.length
                            + " ranks (expected: "
                            + rankExperts.length
                            + ", as the slots)");
        }
        double[] sum = new double[numExperts];
        for (int r = 0; r < rankExperts.length; r++) {
            if (rankShares[r].length != rankExperts[r].length) {
                throw new IllegalArgumentException(
                        "ranks["
                                + r
                                + "].shares: "
                                + rankShares[r].length
                                + " (expected: "
                                + rankExperts[r].length
                                + ", one per slot)");
            }
            for (int s = 0; s < rankShares[r].length; s++) {
                double v = rankShares[r][s];
                if (!(v >= 0) || Double.isInfinite(v)) {
                    throw new IllegalArgumentException(
                            "ranks["
                                    + r
                                    + "].shares["
                                    + s
                                    + "]: "
                                    + v
                                    + " (expected: finite, >= 0)");
                }
                sum[rankExperts[r][s]] += v;
            }
        }
        double[][] shares = new double[rankExperts.length][];
        for (int r = 0; r < rankExperts.length; r++) {
            shares[r] = new double[rankExperts[r].length];
            for (int s = 0; s < shares[r].length; s++) {
                int e = rankExperts[r][s];
                if (sum[e] == 0) {
                    throw new IllegalArgumentException(
                            "shares: expert " + e + " has shares adding up to 0 (expected: > 0)");
                }
                shares[r][s] = rankShares[r][s] / sum[e];
            }
        }
        return new Placement(version, numExperts, copy(rankExperts), shares);
    }

    /** Checks that every slot holds an expert in range and every expert has a slot; counts them. */
    private static void checkSlots(int numExperts, int[][] rankExperts, int[] count) {
        if (numExperts <= 0) {
            throw new IllegalArgumentException("numExperts: " + numExperts + " (expected: > 0)");
        }
        if (rankExperts.length == 0) {
            throw new IllegalArgumentException("ranks: 0 (expected: > 0)");
        }
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
                count[e]++;
            }
        }
        for (int e = 0; e < numExperts; e++) {
            if (count[e] == 0) {
                throw new IllegalArgumentException(
                        "ranks: expert " + e + " is in no slot (expected: every expert in one)");
            }
        }
    }

    private static int[][] copy(int[][] values) {
        int[][] out = new int[values.length][];
        for (int i = 0; i < values.length; i++) {
            out[i] = values[i].clone();
        }
        return out;
    }

    /** Which of the coordinator's placements this is; a later one has a higher version. */
    public long version() {
        return version;
    }

    public int numExperts() {
        return numExperts;
    }

    public int worldSize() {
        return rankExperts.length;
    }

    /** Slots of {@code expert}: 1, or more when it has replicas. */
    public int replicas(int expert) {
        return replicaRank[expert].length;
    }

    /** The rank of replica {@code i} of {@code expert} (replicas in rank, then slot order). */
    public int replicaRank(int expert, int i) {
        return replicaRank[expert][i];
    }

    /** The slot of replica {@code i} of {@code expert} on {@link #replicaRank}. */
    public int replicaSlot(int expert, int i) {
        return replicaSlot[expert][i];
    }

    /** The share of {@code expert}'s tokens that replica {@code i} takes; they add up to 1. */
    public double replicaShare(int expert, int i) {
        return replicaShare[expert][i];
    }

    /** Physical slots over all ranks: the experts plus their extra replicas. */
    public int slots() {
        int slots = 0;
        for (int[] rank : rankExperts) {
            slots += rank.length;
        }
        return slots;
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

    /** The shares of {@code rank}'s slots, in slot order (a copy). */
    public double[] sharesOf(int rank) {
        return rankShares[rank].clone();
    }

    /**
     * Each rank's load as the dispatcher routes ({@link RankLoadModel}): every rank home to an
     * equal part of each expert's {@code expertLoads}, a hosting rank keeping its own part, the
     * others' parts split by the shares.
     */
    public double[] rankLoads(double[] expertLoads) {
        int slots = slots();
        int[] slotRank = new int[slots];
        int[] slotExpert = new int[slots];
        double[] share = new double[slots];
        int s = 0;
        for (int r = 0; r < rankExperts.length; r++) {
            for (int i = 0; i < rankExperts[r].length; i++, s++) {
                slotRank[s] = r;
                slotExpert[s] = rankExperts[r][i];
                share[s] = rankShares[r][i];
            }
        }
        return RankLoadModel.rankLoads(
                rankExperts.length, rankExperts.length, slotRank, slotExpert, share, expertLoads);
    }

    /**
     * This placement with the ranks in {@code lost} taking no tokens, as version {@code version}:
     * their slots keep their experts with share 0, and each expert's other replicas take its tokens
     * in proportion to their shares (evenly, if theirs were all 0). Null when some expert has no
     * replica outside {@code lost}.
     */
    public @Nullable Placement without(boolean[] lost, long version) {
        double[][] shares = new double[rankExperts.length][];
        double[] kept = new double[numExperts];
        int[] replicasKept = new int[numExperts];
        for (int r = 0; r < rankExperts.length; r++) {
            shares[r] = new double[rankExperts[r].length];
            for (int s = 0; s < shares[r].length; s++) {
                if (!lost[r]) {
                    shares[r][s] = rankShares[r][s];
                    kept[rankExperts[r][s]] += rankShares[r][s];
                    replicasKept[rankExperts[r][s]]++;
                }
            }
        }
        for (int e = 0; e < numExperts; e++) {
            if (replicasKept[e] == 0) {
                return null;
            }
        }
        for (int r = 0; r < rankExperts.length; r++) {
            for (int s = 0; s < shares[r].length; s++) {
                if (!lost[r] && kept[rankExperts[r][s]] == 0) {
                    shares[r][s] = 1;
                }
            }
        }
        return Placement.of(version, numExperts, rankExperts, shares);
    }

    /** The same slots and shares as version {@code version}. */
    public Placement withVersion(long version) {
        return new Placement(version, numExperts, rankExperts, rankShares);
    }

    /** Whether {@code other} has the same experts in the same slots with the same shares. */
    public boolean sameSlots(Placement other) {
        return numExperts == other.numExperts
                && Arrays.deepEquals(rankExperts, other.rankExperts)
                && Arrays.deepEquals(rankShares, other.rankShares);
    }

    @Override
    public String toString() {
        return "Placement{version="
                + version
                + ", numExperts="
                + numExperts
                + ", rankExperts="
                + Arrays.deepToString(rankExperts)
                + ", rankShares="
                + Arrays.deepToString(rankShares)
                + "}";
    }
}
