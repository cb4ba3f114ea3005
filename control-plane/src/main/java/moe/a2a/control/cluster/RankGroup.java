package moe.a2a.control.cluster;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import moe.a2a.comm.Transport;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankStepResult;
import moe.a2a.experts.RoutingInput;
import moe.a2a.experts.task.RankTask;
import moe.a2a.kernels.DType;
import moe.a2a.v1.ClusterState;
import moe.a2a.v1.RankCondition;
import moe.a2a.v1.RankState;

/**
 * The ranks that run steps for the scheduler: threads of this JVM ({@link EmbeddedCluster}) or
 * worker processes ({@code RemoteCluster}). Called by the scheduler thread only.
 */
public interface RankGroup extends AutoCloseable {

    /**
     * @throws IllegalArgumentException when {@code placement} is not of {@code model}'s experts
     */
    static void checkPlacement(Placement placement, ModelConfig model) {
        if (placement.numExperts() != model.experts()) {
            throw new IllegalArgumentException(
                    "placement.numExperts: "
                            + placement.numExperts()
                            + " (expected: "
                            + model.experts()
                            + ", the model's)");
        }
    }

    ModelConfig model();

    /** Where each layer's experts live now. */
    LayerPlacements placements();

    /**
     * Has every rank load what it needs to serve {@code layer} under {@code next}, in the
     * background: steps go on with the current placement meanwhile. Completes with the weight bytes
     * loaded over all ranks, or fails (the current placement stays). One staging per layer at a
     * time.
     */
    CompletableFuture<Long> stage(int layer, Placement next);

    /**
     * Switches {@code layer} to {@code next}, whose staging completed: every rank routes the
     * layer's steps submitted from now on by it.
     */
    void activate(int layer, Placement next);

    int worldSize();

    /**
     * Ranks currently held by a live rank: always all of them in-process, the joined workers
     * otherwise.
     */
    int joined();

    /**
     * Ranks of the formed group, ready to run steps: 0 while the group is broken or forming. Any
     * thread.
     */
    int healthy();

    /** Times the group was formed again after a failure. */
    int rebuilds();

    /**
     * The ranks that take home tokens now, ascending: every rank, or, while the group serves
     * without lost ranks, the others. Any thread.
     */
    int[] servingRanks();

    /** Ranks lost that the group serves without (0 when whole or not serving). Any thread. */
    int degradedRanks();

    /**
     * Ranks whose worker lives but is set aside because a link between it and another worker is cut
     * (0 where ranks share one process). Any thread.
     */
    default int partitionedRanks() {
        return 0;
    }

    /**
     * Every rank's condition, and why one does not serve, as DescribeCluster reports it. Ranks that
     * share this process always serve. Any thread.
     */
    default ClusterState describe() {
        ClusterState.Builder cluster =
                ClusterState.newBuilder().setServing(true).setWorldSize(worldSize());
        for (int r = 0; r < worldSize(); r++) {
            cluster.addRanks(
                    RankState.newBuilder()
                            .setRank(r)
                            .setCondition(RankCondition.RANK_CONDITION_SERVING)
                            .setWorker("in-process"));
        }
        return cluster.build();
    }

    /**
     * The data-plane transport now (the current group's under auto), as DescribeModel reports it.
     */
    Transport transport();

    /**
     * The hosts the group spans when its ranks exchange across hosts hierarchically (tcp between
     * hosts, shm inside each), as DescribeModel reports it; 0 for one flat group.
     */
    default int hosts() {
        return 0;
    }

    /**
     * Starts one step: rank {@code r} routes and sends {@code counts[r]} tokens from {@code
     * tokens[r]} (which must stay untouched until the step completes), keeping at most {@code
     * capacities[r]} of its pairs per expert ({@code CapacityFilter.UNLIMITED}: all). Steps run in
     * submission order on every rank, so several may be in flight. The future completes with each
     * rank's result (outputs owned by the result), or with an {@link moe.a2a.comm.A2aException}
     * when a rank failed or the group is not serving. {@code lowLatencyTokens} is 0 for a normal
     * step, else the bound of a low-latency one ({@link moe.a2a.experts.RankRuntime#step}).
     */
    CompletableFuture<RankStepResult[]> submit(
            int layer,
            DType dtype,
            ByteBuffer[] tokens,
            int[] counts,
            RoutingInput[] routing,
            int[] capacities,
            int lowLatencyTokens);

    /**
     * From the next step on, every rank's result carries the expert ids its routing chose ({@link
     * RankStepResult#routedIds}), for a routing trace.
     */
    void recordRouting();

    /**
     * Runs {@code task} on every rank's live communicators, through the handler installed for its
     * kind ({@link moe.a2a.experts.task.RankTaskHandlers}), returning each rank's answer in rank
     * order. Only call it with no step in flight ({@link StepScheduler#runBetweenSteps}). A rank's
     * failure fails the future; one that was not a refusal breaks the group, as a failed step does.
     */
    CompletableFuture<List<byte[]>> onEveryRank(RankTask task);

    @Override
    void close();
}
