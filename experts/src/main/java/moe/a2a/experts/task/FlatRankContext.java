package moe.a2a.experts.task;

import moe.a2a.comm.Communicator;
import moe.a2a.dispatch.HostTopology;
import org.jspecify.annotations.Nullable;

/** A rank of one flat group: every peer on {@code communicator}. */
public record FlatRankContext(int rank, int worldSize, Communicator communicator)
        implements RankContext {

    @Override
    public @Nullable Communicator hostGroup() {
        return null;
    }

    @Override
    public @Nullable HostTopology topology() {
        return null;
    }
}
