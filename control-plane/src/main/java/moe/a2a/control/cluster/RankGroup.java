package moe.a2a.control.cluster;

import java.nio.ByteBuffer;
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
     * Runs one step: rank {@code r} routes and sends {@code counts[r]} tokens from {@code
     * tokens[r]}. Returns each rank's result; outputs stay valid until the next step.
     *
     * @throws moe.a2a.comm.A2aException when a rank failed or the group is not serving
     */
    RankStepResult[] step(int layer, DType dtype, ByteBuffer[] tokens, int[] counts, RoutingInput[] routing);

    @Override
    void close();
}
