package moe.a2a.control.cluster;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import moe.a2a.dispatch.DType;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankStepResult;
import moe.a2a.experts.RoutingInput;

/**
 * The ranks that run steps for the scheduler: threads of this JVM ({@link EmbeddedCluster}) or
 * worker processes ({@code RemoteCluster}). Called by the scheduler thread only.
 */
public interface RankGroup extends AutoCloseable {
    ModelConfig model();

    Placement placement();

    int worldSize();

    /** The data-plane transport, as DescribeModel reports it. */
    String transport();

    /**
     * Starts one step: rank {@code r} routes and sends {@code counts[r]} tokens from {@code
     * tokens[r]} (which must stay untouched until the step completes). Steps run in submission
     * order on every rank, so several may be in flight. The future completes with each rank's
     * result (outputs owned by the result), or with an {@link moe.a2a.comm.A2aException} when a
     * rank failed or the group is not serving.
     */
    CompletableFuture<RankStepResult[]> submit(int layer, DType dtype, ByteBuffer[] tokens, int[] counts,
            RoutingInput[] routing);

    @Override
    void close();
}
