package moe.a2a.worker;

import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.PeerFaults;
import moe.a2a.dispatch.HostTopology;
import moe.a2a.experts.RankRuntime;
import moe.a2a.gpu.DevicePaths;
import moe.a2a.gpu.GpuRankRuntime;
import org.jspecify.annotations.Nullable;

/**
 * The communicators of this rank's group epoch: one flat group ({@code hostGroup} null) of the
 * world ranks {@code members} (empty for every rank), or, for a group across hosts, the rank's rail
 * ({@code main}) and its host group, placed by {@code topology}. Owned by the worker's data-plane
 * thread.
 */
record FormedGroup(
        Communicator main,
        @Nullable Communicator hostGroup,
        @Nullable HostTopology topology,
        int[] members) {

    static FormedGroup flat(Communicator comm, int[] members) {
        return new FormedGroup(comm, null, null, members);
    }

    static FormedGroup acrossHosts(
            Communicator rail, Communicator hostGroup, HostTopology topology) {
        return new FormedGroup(rail, hostGroup, topology, new int[0]);
    }

    /**
     * The world rank of the peer {@code failure} names, or {@link PeerFaults#NONE}; always none
     * across hosts, where rails and host groups number their ranks otherwise.
     */
    int failedPeer(Throwable failure, int worldRank) {
        return hostGroup != null
                ? PeerFaults.NONE
                : PeerFaults.worldPeerOf(failure, worldRank, members);
    }

    boolean acrossHosts() {
        return hostGroup != null;
    }

    /**
     * The time this rank has waited for each world rank's frames in {@code phase}; null where the
     * transport does not measure it, or across hosts (rails and host groups number ranks
     * otherwise).
     */
    long @Nullable [] waitedNanos(ExchangePhase phase) {
        return hostGroup != null ? null : main.waitedNanos(phase);
    }

    /**
     * Gives {@code runtime} this group's communicators for the next steps. Over NCCL, the members
     * first decide together whether all run their steps on the device ({@link DevicePaths}): every
     * member calls this once the group has formed.
     */
    void bindTo(RankRuntime runtime) {
        if (hostGroup == null) {
            boolean onDevice =
                    DevicePaths.everyMemberOnDevice(main, runtime instanceof GpuRankRuntime);
            if (runtime instanceof GpuRankRuntime gpu) {
                gpu.rebind(main, onDevice);
            } else {
                runtime.rebind(main);
            }
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
