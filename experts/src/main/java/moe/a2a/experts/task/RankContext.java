package moe.a2a.experts.task;

import moe.a2a.comm.Communicator;
import moe.a2a.dispatch.HostTopology;
import org.jspecify.annotations.Nullable;

/**
 * Where a {@link RankTask} runs: this rank and the live communicators of its serving group. Valid
 * for the one {@link RankTaskHandler#run} call it is given to, on the thread that owns the
 * communicators.
 */
public interface RankContext {

    int rank();

    int worldSize();

    /** The flat group's communicator, or, for a group across hosts, this rank's rail. */
    Communicator communicator();

    /** The ranks of this rank's host; null unless the group spans hosts hierarchically. */
    @Nullable Communicator hostGroup();

    /** How the ranks sit on the hosts; null unless the group spans hosts hierarchically. */
    @Nullable HostTopology topology();

    /** Whether the group spans hosts: {@link #hostGroup()} and {@link #topology()} are set. */
    default boolean acrossHosts() {
        return hostGroup() != null;
    }

    /** Aborts every communicator of the group, so that the peers fail at once. */
    default void abort(Throwable cause) {
        communicator().abort(cause);
        Communicator hostGroup = hostGroup();
        if (hostGroup != null) {
            hostGroup.abort(cause);
        }
    }
}
