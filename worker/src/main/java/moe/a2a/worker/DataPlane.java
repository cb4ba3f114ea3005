package moe.a2a.worker;

import moe.a2a.comm.Communicator;
import moe.a2a.comm.Transport;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.CpuRankRuntime;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankRuntime;
import moe.a2a.experts.WeightSource;
import moe.a2a.v1.Bound;
import moe.a2a.v1.FormGroup;
import moe.a2a.v1.Join;
import moe.a2a.v1.PrepareGroup;

/**
 * How a worker builds its rank's communicator for one group epoch, in the two steps of the join
 * protocol: {@link #bind} on PrepareGroup (what goes back in Bound), {@link #form} on FormGroup.
 * Used by the worker's data-plane thread only.
 */
public interface DataPlane extends AutoCloseable {
    /** {@link Transport#TCP}, {@link Transport#SHM} or {@link Transport#NCCL}. */
    Transport transport();

    /** Adds to the worker's Join what the control plane needs to know of this data plane. */
    default void describe(Join.Builder join) {}

    /**
     * Gets ready for {@code prepare}'s epoch as {@code rank} of {@code worldSize}; returns the
     * Bound to send.
     */
    Bound bind(int rank, int worldSize, PrepareGroup prepare);

    /**
     * Connects this rank to the group of the epoch last bound; the communicator is the caller's to
     * close.
     */
    Communicator form(FormGroup form);

    /**
     * The runtime of {@code rank} on this data plane: the CPU one ({@link CpuRankRuntime}) unless
     * the data plane keeps rows on the GPU.
     */
    default RankRuntime runtime(
            ModelConfig model, WeightSource weights, Placement placement, int rank) {
        return new CpuRankRuntime(model, weights, placement, rank);
    }

    /** Forgets an epoch that was bound but not formed. */
    void drop();

    @Override
    void close();
}
