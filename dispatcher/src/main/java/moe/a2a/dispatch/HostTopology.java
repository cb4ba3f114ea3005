package moe.a2a.dispatch;

import java.util.Arrays;

/**
 * Which host each rank runs on, for the hierarchical dispatch: {@code hosts} hosts of {@code
 * ranksPerHost} ranks each. A rank's local index is its place among its host's ranks in rank order;
 * its rail is the ranks of the same local index on every host, in host order: the peers it forwards
 * to across hosts. Ranks need not be consecutive on a host (a cluster gives ranks in the order its
 * workers join). Immutable.
 */
public final class HostTopology {
    private final int[] hostOf;
    private final int[] localOf;
    private final int[][] ranksOf;

    private HostTopology(int[] hostOf, int[][] ranksOf) {
        this.hostOf = hostOf;
        this.ranksOf = ranksOf;
        this.localOf = new int[hostOf.length];
        for (int[] ranks : ranksOf) {
            for (int l = 0; l < ranks.length; l++) {
                localOf[ranks[l]] = l;
            }
        }
    }

    /** {@code hosts} hosts, host {@code g} holding the consecutive ranks {@code g·R .. g·R+R-1}. */
    public static HostTopology contiguous(int hosts, int ranksPerHost) {
        if (hosts < 1) {
            throw new IllegalArgumentException("hosts: " + hosts + " (expected: >= 1)");
        }
        if (ranksPerHost < 1) {
            throw new IllegalArgumentException(
                    "ranksPerHost: " + ranksPerHost + " (expected: >= 1)");
        }
        int[] hostOf = new int[hosts * ranksPerHost];
        for (int r = 0; r < hostOf.length; r++) {
            hostOf[r] = r / ranksPerHost;
        }
        return of(hostOf);
    }

    /**
     * The topology where rank {@code r} runs on host {@code hostOf[r]}: hosts numbered from 0 with
     * none skipped, each holding the same number of ranks.
     *
     * @throws IllegalArgumentException naming {@code hostOf} when a host is skipped or the hosts
     *     hold different numbers of ranks
     */
    public static HostTopology of(int[] hostOf) {
        if (hostOf.length == 0) {
            throw new IllegalArgumentException("hostOf: empty (expected: one host per rank)");
        }
        int hosts = Arrays.stream(hostOf).max().getAsInt() + 1;
        int[] count = new int[hosts];
        for (int r = 0; r < hostOf.length; r++) {
            if (hostOf[r] < 0) {
                throw new IllegalArgumentException(
                        "hostOf[" + r + "]: " + hostOf[r] + " (expected: >= 0)");
            }
            count[hostOf[r]]++;
        }
        for (int g = 0; g < hosts; g++) {
            if (count[g] != count[0]) {
                throw new IllegalArgumentException(
                        "hostOf: "
                                + Arrays.toString(hostOf)
                                + " (expected: every host from 0 to "
                                + (hosts - 1)
                                + " with the same number of ranks; host "
                                + g
                                + " has "
                                + count[g]
                                + ", host 0 has "
                                + count[0]
                                + ")");
            }
        }
        int[][] ranksOf = new int[hosts][count[0]];
        int[] next = new int[hosts];
        for (int r = 0; r < hostOf.length; r++) {
            ranksOf[hostOf[r]][next[hostOf[r]]++] = r;
        }
        return new HostTopology(hostOf.clone(), ranksOf);
    }

    public int hosts() {
        return ranksOf.length;
    }

    public int ranksPerHost() {
        return ranksOf[0].length;
    }

    public int worldSize() {
        return hostOf.length;
    }

    /** The host of {@code rank}. */
    public int host(int rank) {
        return hostOf[rank];
    }

    /** The index of {@code rank} among its host's ranks: its rank in the host group. */
    public int local(int rank) {
        return localOf[rank];
    }

    /** The rank with local index {@code local} on {@code host}. */
    public int rank(int host, int local) {
        return ranksOf[host][local];
    }

    /**
     * The placement of {@code host} alone, as its host group routes: every physical slot on the
     * host is one expert of its own, numbered from 0 in local-index then slot order ({@link
     * #hostSlotBase}), so that a row names the very replica its source chose.
     */
    public Placement hostPlacement(Placement placement, int host) {
        checkWorld(placement);
        int[][] rankExperts = new int[ranksPerHost()][];
        int next = 0;
        for (int l = 0; l < rankExperts.length; l++) {
            rankExperts[l] = new int[placement.localExperts(rank(host, l))];
            for (int s = 0; s < rankExperts[l].length; s++) {
                rankExperts[l][s] = next++;
            }
        }
        return Placement.of(placement.version(), next, rankExperts);
    }

    /**
     * The first host-slot number of every rank of {@code placement} on its host: slot {@code s} of
     * rank {@code r} is host slot {@code base[r] + s} in {@link #hostPlacement}.
     */
    public int[] hostSlotBase(Placement placement) {
        checkWorld(placement);
        int[] base = new int[worldSize()];
        for (int[] ranks : ranksOf) {
            for (int l = 1; l < ranks.length; l++) {
                base[ranks[l]] = base[ranks[l - 1]] + placement.localExperts(ranks[l - 1]);
            }
        }
        return base;
    }

    private void checkWorld(Placement placement) {
        if (placement.worldSize() != worldSize()) {
            throw new IllegalArgumentException(
                    "placement.worldSize: "
                            + placement.worldSize()
                            + " (expected: "
                            + worldSize()
                            + ", hosts × ranksPerHost)");
        }
    }

    @Override
    public String toString() {
        return hosts() + " hosts × " + ranksPerHost() + " ranks " + Arrays.deepToString(ranksOf);
    }
}
