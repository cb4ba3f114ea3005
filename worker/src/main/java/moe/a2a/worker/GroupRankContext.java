package moe.a2a.worker;

import moe.a2a.comm.Communicator;
import moe.a2a.dispatch.HostTopology;
import moe.a2a.experts.task.RankContext;
import org.jspecify.annotations.Nullable;

/**
 * This rank of its formed group, as a rank task sees it. Owned by the worker's data-plane thread.
 */
record GroupRankContext(int rank, int worldSize, FormedGroup group) implements RankContext {

    @Override
    public Communicator communicator() {
        return group.main();
    }

    @Override
    public @Nullable Communicator hostGroup() {
        return group.hostGroup();
    }

    @Override
    public @Nullable HostTopology topology() {
        return group.topology();
    }

    @Override
    public void abort(Throwable cause) {
        group.abort(cause);
    }
}
