package moe.a2a.control.cluster;

import moe.a2a.v1.ClusterState;
import moe.a2a.v1.RankCondition;
import moe.a2a.v1.RankState;

/**
 * Tells, rank by rank, whether each serves and why not, for DescribeCluster: from who holds the
 * rank ({@link Membership}), whether the group serves and spans it ({@link ServingState}), and
 * whether the {@link GroupConductor} set it aside for a cut link or evicted it. The reasons are the
 * ones the control plane logs. Not thread-safe: guarded by {@link RemoteCluster}'s lock.
 */
final class RankConditions {
    private final Membership membership;
    private final ServingState state;
    private final GroupFormation formation;
    private final GroupConductor conductor;
    private final StragglerWatch stragglers;
    private final int worldSize;

    RankConditions(
            Membership membership,
            ServingState state,
            GroupFormation formation,
            GroupConductor conductor,
            StragglerWatch stragglers,
            int worldSize) {
        this.membership = membership;
        this.state = state;
        this.formation = formation;
        this.conductor = conductor;
        this.stragglers = stragglers;
        this.worldSize = worldSize;
    }

    ClusterState describe() {
        ClusterState.Builder cluster =
                ClusterState.newBuilder()
                        .setServing(state.serving())
                        .setReason(state.reason())
                        .setEpoch(formation.epoch())
                        .setWorldSize(worldSize);
        for (int r = 0; r < worldSize; r++) {
            cluster.addRanks(rank(r));
        }
        return cluster.build();
    }

    private RankState rank(int r) {
        RankState.Builder rank =
                RankState.newBuilder().setRank(r).setStraggler(stragglers.flagged(r));
        WorkerSession holder = membership.holder(r);
        if (holder == null) {
            String lost = conductor.lostFor(r);
            return rank.setCondition(RankCondition.RANK_CONDITION_LOST)
                    .setReason(
                            lost != null
                                    ? lost + "; waiting for a worker to take the rank"
                                    : "no worker has joined for it yet")
                    .build();
        }
        rank.setWorker(holder.toString());
        int cutPeer = conductor.cutLinks().cutPeer(r);
        if (cutPeer >= 0) {
            return rank.setCondition(RankCondition.RANK_CONDITION_PARTITIONED)
                    .setReason(
                            "link to rank "
                                    + cutPeer
                                    + " cut: set aside, and probed until it reaches its peer")
                    .build();
        }
        if (conductor.isEvicted(r)) {
            return rank.setCondition(RankCondition.RANK_CONDITION_EVICTED)
                    .setReason("evicted as a straggler; tried again at " + conductor.readmitAt(r))
                    .build();
        }
        if (state.serving() && state.inGroup(r)) {
            return rank.setCondition(RankCondition.RANK_CONDITION_SERVING).build();
        }
        return rank.setCondition(RankCondition.RANK_CONDITION_FORMING)
                .setReason(
                        state.serving()
                                ? "joined while the group served without it: the group forms"
                                        + " again with it"
                                : state.reason())
                .build();
    }
}
