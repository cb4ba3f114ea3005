package moe.a2a.control.grpc;

import static moe.a2a.control.grpc.NcclClusterTest.E;
import static moe.a2a.control.grpc.NcclClusterTest.H;
import static moe.a2a.control.grpc.NcclClusterTest.I;
import static moe.a2a.control.grpc.NcclClusterTest.WORLD;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import moe.a2a.comm.tcp.TcpDataPlane;
import moe.a2a.comm.tcp.TcpTransportProvider;
import moe.a2a.control.cluster.RemoteCluster;
import moe.a2a.experts.SeededWeights;
import moe.a2a.v1.ClusterState;
import moe.a2a.v1.DescribeClusterRequest;
import moe.a2a.v1.RankCondition;
import moe.a2a.v1.RankState;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * DescribeCluster and WatchCluster on a cluster of worker agents over TCP: every rank serving once
 * the group formed; when a worker leaves, its rank lost with the reason the log gives and the other
 * waiting for the group; every rank serving again once a replacement joined. The watch sends each
 * of those states as it happens, none twice in a row.
 */
@Timeout(120)
class ClusterStateTest {
    private static final DescribeClusterRequest ASK = DescribeClusterRequest.getDefaultInstance();

    final SeededWeights weights = new SeededWeights(11, E, H, I, 1);

    @Test
    void shouldTellEachRanksConditionAsWorkersLeaveAndJoin() throws Exception {
        RemoteCluster cluster = NcclClusterTest.remoteCluster(TcpTransportProvider.TCP);
        List<ClusterState> seen = new ArrayList<>();
        try (ServedCluster served =
                ServedCluster.start(
                        cluster,
                        weights,
                        WORLD,
                        (tcp, r) -> List.of(new TcpDataPlane(tcp, "127.0.0.1", 0, null)))) {
            Iterator<ClusterState> watch =
                    served.stub.withDeadlineAfter(100, TimeUnit.SECONDS).watchCluster(ASK);
            ClusterState whole = next(watch, seen, ClusterState::getServing);
            assertThat(whole.getWorldSize()).isEqualTo(WORLD);
            assertThat(whole.getReason()).isEmpty();
            assertThat(whole.getRanksList())
                    .extracting(RankState::getRank, RankState::getCondition)
                    .containsExactly(
                            tuple(0, RankCondition.RANK_CONDITION_SERVING),
                            tuple(1, RankCondition.RANK_CONDITION_SERVING));
            assertThat(whole.getRanks(1).getWorker()).contains("(rank 1)");
            assertThat(served.stub.describeCluster(ASK)).isEqualTo(whole);

            served.agents.stop(1);
            ClusterState broken =
                    next(
                            watch,
                            seen,
                            s -> s.getRanks(1).getCondition() == RankCondition.RANK_CONDITION_LOST);
            assertThat(broken.getServing())
                    .as("rank 1's experts have no replica: the group waits")
                    .isFalse();
            assertThat(broken.getReason()).contains("rank 1 lost");
            assertThat(broken.getRanks(1).getReason())
                    .contains("rank 1 lost")
                    .contains("waiting for a worker to take the rank");
            assertThat(broken.getRanks(1).getWorker()).isEmpty();
            assertThat(broken.getRanks(0).getCondition())
                    .isEqualTo(RankCondition.RANK_CONDITION_FORMING);
            assertThat(broken.getRanks(0).getReason()).isEqualTo(broken.getReason());

            served.agents.add(
                    served.toCluster,
                    "worker-1-replacement",
                    1,
                    List.of(new TcpDataPlane(served.tcp, "127.0.0.1", 0, null)));
            ClusterState again = next(watch, seen, ClusterState::getServing);
            assertThat(again.getRanksList())
                    .allMatch(r -> r.getCondition() == RankCondition.RANK_CONDITION_SERVING);
            assertThat(again.getRanks(1).getWorker()).contains("worker-1-replacement");
            assertThat(again.getEpoch()).isGreaterThan(whole.getEpoch());
        }
        for (int i = 1; i < seen.size(); i++) {
            assertThat(seen.get(i)).as("state %d sent again", i).isNotEqualTo(seen.get(i - 1));
        }
    }

    /** Reads the watch until a state matches, keeping every state read. */
    private static ClusterState next(
            Iterator<ClusterState> watch, List<ClusterState> seen, Predicate<ClusterState> wanted) {
        while (true) {
            assertThat(watch.hasNext()).as("the watch ended early; saw " + seen).isTrue();
            ClusterState state = watch.next();
            seen.add(state);
            if (wanted.test(state)) {
                return state;
            }
        }
    }
}
