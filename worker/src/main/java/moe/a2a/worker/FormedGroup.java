package moe.a2a.worker;

import moe.a2a.comm.Communicator;
import moe.a2a.dispatch.HostTopology;
import moe.a2a.experts.RankRuntime;
import org.jspecify.annotations.Nullable;

/**
 * The communicators of this rank's group epoch: one flat group ({@code hostGroup} null), or, for a
 * group across hosts, the rank's rail ({@code main}) and its host group, placed by {@code
 * topology}. Owned by the worker's data-plane thread.
 */
record FormedGroup(
        Communicator main, @Nullable Communicator hostGroup, @Nullable HostTopology topology) {

    static FormedGroup flat(Communicator comm) {
        return new FormedGroup(comm, null, null);
    }

    boolean acrossHosts() {
        return hostGroup != null;
    }

    /** Gives {@code runtime} this group's communicators for the next steps. */
    void bindTo(RankRuntime runtime) {
        if (hostGroup == null) {
            runtime.rebind(main);
        } else {
            runtime.rebind(main, hostGroup, topology);
        }
    }

    /** Fails every exchange in progress or to come on either communicator, at once. */
    void abort(Throwable cause) {
        main.abort(cause);
        if (hostGroup != null) {
            hostGroup.abort(cause);
        }
    }

    void close() {
        try {
            main.close();
        } finally {
            if (hostGroup != null) {
                hostGroup.close();
            }
        }
    }

    /** For the log: the group's shape. */
    String describe() {
        return topology == null ? "" : ", across " + topology;
    }
}
