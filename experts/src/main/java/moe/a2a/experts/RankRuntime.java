package moe.a2a.experts;

import java.nio.ByteBuffer;
import moe.a2a.comm.Communicator;
import moe.a2a.dispatch.HostTopology;
import moe.a2a.dispatch.Placement;
import moe.a2a.kernels.DType;

/**
 * What runs one rank's share of every step: route, dispatch, experts, combine. {@link
 * CpuRankRuntime} on the CPU; a GPU runtime keeps rows in device memory. Owned by the rank's
 * thread.
 */
public interface RankRuntime {
    /** Continues on a new communicator (same rank), as when the old group broke. */
    void rebind(Communicator comm);

    /**
     * Continues on a group across hosts (same rank): the rail (this rank's peers of the same local
     * index on every host, its rank this rank's host) and the host group (this host's ranks, its
     * rank this rank's local index), placed by {@code topology}.
     *
     * @throws UnsupportedOperationException when this runtime exchanges on one flat group only
     */
    default void rebind(Communicator rail, Communicator hostGroup, HostTopology topology) {
        throw new UnsupportedOperationException(
                getClass().getSimpleName() + " exchanges on one flat group only");
    }

    /** The placement the next step of {@code layer} routes by. */
    Placement placement(int layer);

    /**
     * Loads what this rank needs to serve {@code layer} under {@code next}, while steps go on with
     * the current placement. Any thread; one staging per layer at a time.
     *
     * @throws moe.a2a.comm.A2aException when this runtime cannot change placement
     */
    LayerSlots stage(int layer, Placement next);

    /**
     * Makes {@code staged} current: the layer's later steps route by its placement. Rank thread,
     * between steps; every rank installs it before the same step.
     */
    void install(LayerSlots staged);

    /** Where this rank holds its experts' weights, as placed now. Any thread. */
    WeightMemory weightMemory();

    /**
     * From the next step on, each result carries the expert ids the routing chose ({@link
     * RankStepResult#routedIds}), for a routing trace; until then it carries none. Any thread.
     */
    void recordRouting();

    /**
     * Runs one step for this rank's {@code numTokens} tokens ({@code [T, H]} of {@code dtype} in
     * {@code tokens}, from index 0). Every rank of the group runs every step, with zero tokens if
     * it has none.
     *
     * @param capacity this rank's share of each expert's capacity this step: at most this many of
     *     its (token, expert) pairs per expert are kept ({@link moe.a2a.dispatch.CapacityFilter});
     *     {@link moe.a2a.dispatch.CapacityFilter#UNLIMITED} keeps all
     * @param lowLatencyTokens 0 to exchange in normal mode; else the step runs in low-latency mode
     *     ({@link moe.a2a.dispatch.LowLatencyDispatcher}) with regions for this many tokens a rank,
     *     the same on every rank, and at least every rank's {@code numTokens}
     */
    RankStepResult step(
            int layer,
            DType dtype,
            ByteBuffer tokens,
            int numTokens,
            RoutingInput routing,
            int capacity,
            int lowLatencyTokens);
}
