package moe.a2a.control.grpc;

import static moe.a2a.control.grpc.NcclClusterTest.E;
import static moe.a2a.control.grpc.NcclClusterTest.H;
import static moe.a2a.control.grpc.NcclClusterTest.I;
import static moe.a2a.control.grpc.NcclClusterTest.K;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import moe.a2a.comm.nccl.NcclCommunicator;
import moe.a2a.comm.nccl.NcclDataPlane;
import moe.a2a.comm.nccl.NcclTransportProvider;
import moe.a2a.comm.nccl.SimulatedNccl;
import moe.a2a.control.cluster.ClusterListener;
import moe.a2a.control.cluster.NotServingReasons;
import moe.a2a.control.cluster.QuietListener;
import moe.a2a.control.cluster.RemoteCluster;
import moe.a2a.control.grpc.MoeGrpcServiceTest.Routing;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Serving without a lost rank over NCCL (simulated: host-path ranks): every expert has a replica on
 * another rank, so when rank 0's worker goes between steps the three left shrink the communicator
 * they share ({@code ncclCommShrink}) into one of their own and answer right; when a worker takes
 * rank 0 again the group forms whole from a fresh unique id. After a failure mid-exchange NCCL has
 * aborted every communicator, and the group forms again from a fresh unique id.
 */
@Timeout(120)
class NcclDegradedServingTest {
    static final int WORLD = 4;

    final SeededWeights weights = new SeededWeights(13, E, H, I, 1);
    final ReferenceMoeLayer reference = new ReferenceMoeLayer(weights);

    @Test
    void shouldShrinkIntoTheRanksLeftAndFormWholeAgain() throws Exception {
        RemoteCluster cluster = replicatedCluster(TimeUnit.SECONDS.toNanos(10));
        SimulatedNccl nccl = new SimulatedNccl();
        SplittableRandom random = new SplittableRandom(9);
        try (ServedCluster served = servedWhole(cluster, nccl, random)) {
            served.agents.stop(0);
            awaitServingWithout(cluster, 1);
            assertThat(nccl.shrinks())
                    .as("each of the three left shrank the whole group's without rank 0")
                    .containsExactly(List.of(0), List.of(0), List.of(0));
            assertThat(nccl.groupIds()).as("no fresh init for the three left").hasSize(1);
            assertThat(nccl.madeIds())
                    .as("rank 1, first of the three left, made no unique id beside its parent")
                    .hasSize(1);
            assertThat(nccl.joinedTransports()).as("joined the whole group only").hasSize(WORLD);
            answerRight(served, random, "degraded");

            served.agents.add(
                    served.toCluster, "worker-0-again", 0, List.of(new NcclDataPlane(nccl)));
            awaitServingWithout(cluster, 0);
            assertThat(nccl.groupIds()).as("a fresh init for the group that grew").hasSize(2);
            assertThat(nccl.madeIds()).as("the returning rank 0 made its id").hasSize(2);
            assertThat(nccl.shrinks()).hasSize(WORLD - 1);
            answerRight(served, random, "whole again");
        }
    }

    @Test
    void shouldInitAfreshWhenAnExchangeFailedAndNcclAbortedTheParents() throws Exception {
        RemoteCluster cluster = replicatedCluster(TimeUnit.SECONDS.toNanos(10));
        SimulatedNccl nccl = new SimulatedNccl();
        SplittableRandom random = new SplittableRandom(10);
        try (ServedCluster served = servedWhole(cluster, nccl, random)) {
            nccl.failJoinedGroups("test: a connection reset mid-exchange");
            ForwardRequest request =
                    MoeGrpcServiceTest.request(random, 0, 7, DType.FP32, Routing.TOPK);
            assertThatThrownBy(() -> served.stub.forward(request))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> assertThat(e.getStatus().getCode()).isEqualTo(Code.UNAVAILABLE));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while ((nccl.groupIds().size() != 2 || cluster.healthy() != WORLD)
                    && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThat(nccl.groupIds()).as("a fresh init after the abort").hasSize(2);
            assertThat(cluster.healthy()).as("ranks serving again").isEqualTo(WORLD);
            assertThat(nccl.shrinks()).as("no shrink of an aborted parent").isEmpty();
            answerRight(served, random, "after the failure");
        }
    }

    /**
     * {@code cluster} served by {@link #WORLD} workers over {@code nccl}, formed, answering right.
     */
    private ServedCluster servedWhole(
            RemoteCluster cluster, SimulatedNccl nccl, SplittableRandom random) throws Exception {
        ServedCluster served =
                ServedCluster.start(
                        cluster, weights, WORLD, (tcp, r) -> List.of(new NcclDataPlane(nccl)));
        try {
            served.agents.awaitFormed(cluster, "four ranks over the simulated NCCL");
            answerRight(served, random, "whole");
            return served;
        } catch (Exception | Error e) {
            served.close();
            throw e;
        }
    }

    /**
     * A rank whose device hangs mid-step, and whose worker then goes: the control plane abandons
     * the epoch, and its AbortGroup ends the other ranks' waits at once rather than at the exchange
     * timeout (two minutes here, past the 30 s this test waits), so the three left serve without it
     * well before that.
     */
    @Test
    void shouldEndTheWaitsOfTheRanksLeftWhenTheEpochIsAbandoned() throws Exception {
        RemoteCluster cluster = replicatedCluster(TimeUnit.MINUTES.toNanos(2));
        SimulatedNccl nccl = new SimulatedNccl();
        SplittableRandom random = new SplittableRandom(11);
        try (ServedCluster served = servedWhole(cluster, nccl, random)) {
            nccl.stick(1);
            ForwardRequest request =
                    MoeGrpcServiceTest.request(random, 0, 9, DType.FP32, Routing.TOPK);
            CompletableFuture<ForwardResponse> inFlight =
                    CompletableFuture.supplyAsync(() -> served.stub.forward(request));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!nccl.pending(0) && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertThat(nccl.pending(0)).as("rank 0 waits for the stuck rank mid-step").isTrue();

            served.agents.stop(1);
            awaitServingWithout(cluster, 1);
            assertThatThrownBy(() -> inFlight.get(30, TimeUnit.SECONDS))
                    .hasCauseInstanceOf(StatusRuntimeException.class);
            answerRight(served, random, "without the stuck rank");
        }
    }

    /**
     * A rank whose device hangs in the group's first exchange (the members deciding together
     * whether all run on the device, before the group is ready), and whose worker then goes: the
     * AbortGroup that follows ends the others' waits, and they answer GroupFailed for the abandoned
     * epoch and keep their sessions, then serve without it. Their sessions ended there before.
     */
    @Test
    void shouldKeepTheSessionsOfTheRanksLeftWhenTheEpochIsAbandonedBeforeItServed()
            throws Exception {
        NotServingReasons notServing = new NotServingReasons();
        RemoteCluster cluster = replicatedCluster(TimeUnit.MINUTES.toNanos(2), notServing);
        SimulatedNccl nccl = new SimulatedNccl();
        AtomicBoolean stuck = new AtomicBoolean();
        NcclDataPlane.NcclProvider stuckOnFirstJoin =
                nccl.joiningThrough(
                        (id, rank, worldSize, timeoutNs) -> {
                            NcclCommunicator joined = nccl.join(id, rank, worldSize, timeoutNs);
                            if (rank == 1 && stuck.compareAndSet(false, true)) {
                                nccl.stick(1);
                            }
                            return joined;
                        });
        SplittableRandom random = new SplittableRandom(12);
        try (ServedCluster served =
                ServedCluster.start(
                        cluster,
                        weights,
                        WORLD,
                        (tcp, r) -> List.of(new NcclDataPlane(stuckOnFirstJoin)))) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!nccl.pending(0) && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertThat(nccl.pending(0))
                    .as("rank 0 waits for the stuck rank in the group's first exchange")
                    .isTrue();
            assertThat(cluster.healthy()).as("the group never served").isZero();

            served.agents.stop(1);
            awaitServingWithout(cluster, 1);
            assertThat(notServing.reasons())
                    .as("only rank 1's session ended")
                    .filteredOn(reason -> reason.contains(" lost ("))
                    .allMatch(reason -> reason.startsWith("rank 1 lost"));
            answerRight(served, random, "without the rank stuck before serving");
        }
    }

    /**
     * Waits up to 30 s for {@code cluster} to serve on every rank but {@code without} of them, and
     * checks it does.
     */
    private static void awaitServingWithout(RemoteCluster cluster, int without)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while ((cluster.degradedRanks() != without || cluster.healthy() != WORLD - without)
                && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(cluster.degradedRanks()).as("ranks served without").isEqualTo(without);
        assertThat(cluster.healthy()).as("ranks serving").isEqualTo(WORLD - without);
    }

    /**
     * Rank r hosts experts 2r, 2r+1 and the next rank's two: each expert on two ranks; the workers
     * wait {@code exchangeTimeoutNs} for a peer.
     */
    private static RemoteCluster replicatedCluster(long exchangeTimeoutNs) {
        return replicatedCluster(exchangeTimeoutNs, new QuietListener());
    }

    private static RemoteCluster replicatedCluster(
            long exchangeTimeoutNs, ClusterListener listener) {
        int[][] rankExperts = new int[WORLD][];
        for (int r = 0; r < WORLD; r++) {
            int next = (r + 1) % WORLD;
            rankExperts[r] = new int[] {2 * r, 2 * r + 1, 2 * next, 2 * next + 1};
        }
        return new RemoteCluster(
                new ModelConfig(E, H, I, K, 1),
                NcclClusterTest.spec(13),
                "test",
                Placement.of(Placement.FIRST_VERSION, E, rankExperts),
                NcclTransportProvider.NCCL,
                exchangeTimeoutNs,
                TimeUnit.SECONDS.toNanos(30),
                listener);
    }

    private void answerRight(ServedCluster served, SplittableRandom random, String how) {
        for (int i = 0; i < 3; i++) {
            ForwardRequest request =
                    MoeGrpcServiceTest.request(random, 0, 6 + 5 * i, DType.FP32, Routing.TOPK);
            NcclClusterTest.assertMatchesReference(
                    how + " " + i, reference, request, served.stub.forward(request));
        }
    }
}
