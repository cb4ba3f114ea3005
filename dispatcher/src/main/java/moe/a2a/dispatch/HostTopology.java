package moe.a2a.dispatch;

/**
 * Which host each rank runs on, for the hierarchical dispatch: {@code hosts} hosts of {@code
 * ranksPerHost} ranks each, host {@code g} holding the consecutive ranks {@code g·R .. g·R+R-1}. A
 * rank's rail is the ranks of the same local index on every host: the peers it forwards to across
 * hosts. Immutable.
 */
public record HostTopology(int hosts, int ranksPerHost) {
    public HostTopology {
        if (hosts < 1) {
            throw new IllegalArgumentException("hosts: " + hosts + " (expected: >= 1)");
        }
        if (ranksPerHost < 1) {
            throw new IllegalArgumentException(
                    "ranksPerHost: " + ranksPerHost + " (expected: >= 1)");
        }
    }

    public int worldSize() {
        return hosts * ranksPerHost;
    }

    /** The host of {@code rank}. */
    public int host(int rank) {
        return rank / ranksPerHost;
    }

    /** The index of {@code rank} among its host's ranks: its rank in the host group. */
    public int local(int rank) {
        return rank % ranksPerHost;
    }

    /** The rank with local index {@code local} on {@code host}. */
    public int rank(int host, int local) {
        return host * ranksPerHost + local;
    }

    /**
     * The placement of {@code host} alone, as its host group routes: every physical slot on the
     * host is one expert of its own, numbered from 0 in rank then slot order ({@link
     * #hostSlotBase}), so that a row names the very replica its source chose.
     */
    public Placement hostPlacement(Placement placement, int host) {
        checkWorld(placement);
        int[][] rankExperts = new int[ranksPerHost][];
        int next = 0;
        for (int l = 0; l < ranksPerHost; l++) {
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
        for (int r = 0; r < base.length; r++) {
            base[r] = local(r) == 0 ? 0 : base[r - 1] + placement.localExperts(r - 1);
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
}
