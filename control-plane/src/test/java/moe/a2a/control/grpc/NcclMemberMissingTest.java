package moe.a2a.control.grpc;

import static moe.a2a.control.grpc.NcclClusterTest.E;
import static moe.a2a.control.grpc.NcclClusterTest.H;
import static moe.a2a.control.grpc.NcclClusterTest.I;
import static moe.a2a.control.grpc.NcclClusterTest.K;
import static moe.a2a.control.grpc.NcclClusterTest.WORLD;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import moe.a2a.comm.ExchangeTimeoutException;
import moe.a2a.comm.nccl.NcclDataPlane;
import moe.a2a.comm.nccl.NcclTransportProvider;
import moe.a2a.comm.nccl.SimulatedNccl;
import moe.a2a.control.cluster.NotServingReasons;
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
 * An NCCL init that times out waiting for a member it cannot name (NCCL never says which) fails the
 * group epoch, not the workers' control sessions: each rank answers GroupFailed, keeps its session,
 * and the next epoch forms from a fresh unique id and answers right.
 */
@Timeout(120)
class NcclMemberMissingTest {
    final SeededWeights weights = new SeededWeights(17, E, H, I, 1);

    @Test
    void shouldFormAgainWithoutEndingSessionsWhenAnInitTimesOut() throws Exception {
        NotServingReasons notServing = new NotServingReasons();
        RemoteCluster cluster =
                new RemoteCluster(
                        new ModelConfig(E, H, I, K, 1),
                        NcclClusterTest.spec(17),
                        "test",
                        Placement.contiguous(E, WORLD),
                        NcclTransportProvider.NCCL,
                        TimeUnit.SECONDS.toNanos(10),
                        TimeUnit.SECONDS.toNanos(30),
                        notServing);
        SimulatedNccl nccl = new SimulatedNccl();
        AtomicInteger timedOut = new AtomicInteger();
        // each rank's first init times out as NCCL's does when a member never arrives: past the
        // deadline, naming no peer
        NcclDataPlane.NcclProvider inits =
                nccl.joiningThrough(
                        (id, rank, worldSize, timeoutNs) -> {
                            if (timedOut.get() < worldSize
                                    && timedOut.incrementAndGet() <= worldSize) {
                                throw ExchangeTimeoutException.joining(rank, timeoutNs);
                            }
                            return nccl.join(id, rank, worldSize, timeoutNs);
                        });
        try (ServedCluster served =
                ServedCluster.start(
                        cluster, weights, WORLD, (tcp, r) -> List.of(new NcclDataPlane(inits)))) {
            served.agents.awaitFormed(cluster, "formed on a later epoch");
            assertThat(timedOut.get()).as("first inits timed out").isEqualTo(WORLD);
            assertThat(nccl.madeIds()).as("a fresh unique id for the later epoch").hasSize(2);
            assertThat(nccl.groupIds()).as("only the later epoch's group joined").hasSize(1);
            assertThat(notServing.reasons())
                    .as("no worker's session ended")
                    .noneMatch(reason -> reason.contains("lost"));
            ReferenceMoeLayer reference = new ReferenceMoeLayer(weights);
            SplittableRandom random = new SplittableRandom(21);
            for (int i = 0; i < 3; i++) {
                ForwardRequest request =
                        MoeGrpcServiceTest.request(random, 0, 4 + 5 * i, DType.FP32, Routing.TOPK);
                NcclClusterTest.assertMatchesReference(
                        "after the timed-out init " + i,
                        reference,
                        request,
                        served.stub.forward(request));
            }
        }
    }
}
