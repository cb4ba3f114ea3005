package moe.a2a.control.grpc;

import static moe.a2a.control.grpc.NcclClusterTest.E;
import static moe.a2a.control.grpc.NcclClusterTest.H;
import static moe.a2a.control.grpc.NcclClusterTest.I;
import static moe.a2a.control.grpc.NcclClusterTest.K;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.nccl.NcclDataPlane;
import moe.a2a.comm.nccl.NcclTransportProvider;
import moe.a2a.comm.nccl.SimulatedNccl;
import moe.a2a.control.cluster.QuietListener;
import moe.a2a.control.cluster.RemoteCluster;
import moe.a2a.control.grpc.MoeGrpcServiceTest.Routing;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import moe.a2a.v1.ForwardRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Serving without a lost rank over NCCL (simulated: host-path ranks): every expert has a replica on
 * another rank, so when rank 0's worker goes the three left form a communicator of their own, from
 * a unique id the first of them (rank 1) makes, and answer right; when a worker takes rank 0 again
 * the group forms whole.
 */
@Timeout(120)
class NcclDegradedServingTest {
    static final int WORLD = 4;

    final SeededWeights weights = new SeededWeights(13, E, H, I, 1);

    @Test
    void shouldServeWithoutALostRankAndFormWholeAgain() throws Exception {
        // rank r hosts experts 2r, 2r+1 and the next rank's two: each expert on two ranks
        int[][] rankExperts = new int[WORLD][];
        for (int r = 0; r < WORLD; r++) {
            int next = (r + 1) % WORLD;
            rankExperts[r] = new int[] {2 * r, 2 * r + 1, 2 * next, 2 * next + 1};
        }
        RemoteCluster cluster =
                new RemoteCluster(
                        new ModelConfig(E, H, I, K, 1),
                        NcclClusterTest.spec(13),
                        "test",
                        Placement.of(Placement.FIRST_VERSION, E, rankExperts),
                        NcclTransportProvider.NCCL,
                        TimeUnit.SECONDS.toNanos(10),
                        TimeUnit.SECONDS.toNanos(30),
                        new QuietListener());
        SimulatedNccl nccl = new SimulatedNccl();
        ReferenceMoeLayer reference = new ReferenceMoeLayer(weights);
        SplittableRandom random = new SplittableRandom(9);
        try (ServedCluster served =
                ServedCluster.start(
                        cluster, weights, WORLD, (tcp, r) -> List.of(new NcclDataPlane(nccl)))) {
            served.agents.awaitFormed(cluster, "four ranks over the simulated NCCL");
            answerRight(served, reference, random, "whole");

            served.agents.stop(0);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while ((cluster.degradedRanks() != 1 || cluster.healthy() != WORLD - 1)
                    && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThat(cluster.degradedRanks()).as("ranks served without").isEqualTo(1);
            assertThat(cluster.healthy()).as("ranks serving").isEqualTo(WORLD - 1);
            assertThat(nccl.groupIds())
                    .as("the whole group's id, and the one rank 1 made for the three left")
                    .hasSize(2);
            answerRight(served, reference, random, "degraded");

            served.agents.add(
                    served.toCluster, "worker-0-again", 0, List.of(new NcclDataPlane(nccl)));
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while ((cluster.degradedRanks() != 0 || cluster.healthy() != WORLD)
                    && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThat(cluster.degradedRanks()).as("ranks served without, once whole").isZero();
            assertThat(cluster.healthy()).as("ranks serving, once whole").isEqualTo(WORLD);
            answerRight(served, reference, random, "whole again");
        }
    }

    private static void answerRight(
            ServedCluster served,
            ReferenceMoeLayer reference,
            SplittableRandom random,
            String how) {
        for (int i = 0; i < 3; i++) {
            ForwardRequest request =
                    MoeGrpcServiceTest.request(random, 0, 6 + 5 * i, DType.FP32, Routing.TOPK);
            NcclClusterTest.assertMatchesReference(
                    how + " " + i, reference, request, served.stub.forward(request));
        }
    }
}
