package moe.a2a.dispatch;

import java.util.Arrays;

/**
 * Which replica each of a token's assignments goes to, token by token, so that a token reaches its
 * experts through as few ranks as its replicas allow while each replica keeps to its share.
 *
 * <p>For one token: an expert with a replica on the home rank goes there, and an expert with one
 * replica goes to it ({@link #forced}); those ranks are now visited. Each other assignment, in k
 * order, goes to a replica on a rank the token already visits if one is within its allowance, the
 * one furthest behind its share among those; otherwise to the replica furthest behind its share
 * (ties to the first). A replica's share of an expert's assignments so far this step, this one
 * included, is {@code share × seen}; its allowance is that plus {@link #AHEAD} of it, and at least
 * one. The choice depends on the step's routing alone: every rank computes every rank's the same
 * way.
 *
 * <p>Owned by a {@link DispatchLayout}, which walks each token's assignments ({@link #see} each,
 * {@link #took} each choice); reset at each step.
 */
final class ReplicaChoice {
    /** How far ahead of its share a replica may run to keep a token's rows together. */
    static final double AHEAD = 0.10;

    private final int homeRank;
    private Placement placement;

    /** Per expert: its replica on the home rank, or -1. */
    private final int[] homeReplica;

    /** Per expert and replica: assignments given this step. */
    private final int[][] given;

    /** Per expert: assignments seen this step. */
    private final long[] seen;

    ReplicaChoice(Placement placement, int homeRank) {
        this.homeRank = homeRank;
        this.homeReplica = new int[placement.numExperts()];
        this.given = new int[placement.numExperts()][];
        this.seen = new long[placement.numExperts()];
        use(placement);
    }

    void use(Placement next) {
        this.placement = next;
        for (int e = 0; e < homeReplica.length; e++) {
            homeReplica[e] = -1;
            for (int i = next.replicas(e) - 1; i >= 0; i--) {
                if (next.replicaRank(e, i) == homeRank) {
                    homeReplica[e] = i;
                }
            }
            given[e] = new int[next.replicas(e)];
        }
    }

    void reset() {
        for (int[] g : given) {
            Arrays.fill(g, 0);
        }
        Arrays.fill(seen, 0);
    }

    /** Counts an assignment of {@code expert}: its replicas' shares grow by it. */
    void see(int expert) {
        seen[expert]++;
    }

    /**
     * The replica an assignment of {@code expert} must take, before any choice: the one on the home
     * rank, or the only one; -1 when it is to be {@link #spread}.
     */
    int forced(int expert) {
        return homeReplica[expert] >= 0 ? homeReplica[expert] : given[expert].length == 1 ? 0 : -1;
    }

    /** Counts the assignment of {@code expert} that {@code replica} takes. */
    void took(int expert, int replica) {
        given[expert][replica]++;
    }

    /**
     * The replica of a multi-replica {@code expert} for this assignment (see the class comment):
     * {@code visited[offset + r]} says whether the token already visits rank {@code r}.
     */
    int spread(int expert, boolean[] visited, int offset) {
        final int[] g = given[expert];
        int behind = 0;
        double behindLag = Double.NEGATIVE_INFINITY;
        int near = -1;
        double nearLag = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < g.length; i++) {
            final double fair = placement.replicaShare(expert, i) * seen[expert];
            final double lag = fair - g[i];
            if (lag > behindLag) {
                behindLag = lag;
                behind = i;
            }
            // a replica without a share (a lost rank's, say) takes no one else's tokens
            final boolean allowed = fair > 0 && g[i] + 1 <= Math.max(1, fair * (1 + AHEAD));
            if (allowed && visited[offset + placement.replicaRank(expert, i)] && lag > nearLag) {
                nearLag = lag;
                near = i;
            }
        }
        return near >= 0 ? near : behind;
    }
}
