package moe.a2a.worker;

import java.util.ArrayList;
import java.util.List;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.DataPlane;
import moe.a2a.comm.GroupEpoch;
import moe.a2a.comm.GroupPeers;
import moe.a2a.comm.PeerFailedException;
import moe.a2a.comm.PeerFaults;
import moe.a2a.comm.PlaneBinding;
import moe.a2a.comm.Transport;
import moe.a2a.dispatch.HostTopology;
import moe.a2a.protocol.PlaneCodec;
import moe.a2a.v1.Bound;
import moe.a2a.v1.FormGroup;
import moe.a2a.v1.PrepareGroup;

/**
 * How a worker joins a group across hosts ({@code PrepareGroup.member_hosts}): its rail over its
 * network data plane (rank: its host; size: the hosts) and its host group over its host-memory one
 * (rank: its local index; size: the host's ranks), bound and formed together. Each rail and each
 * host group gets a group id of its own, derived from the epoch's, so that a connection or file of
 * one never passes for another's. Used by the worker's data-plane thread only.
 */
final class HostGroupsPlane {
    /** Spreads the salts of {@link #groupId} over the whole id. */
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;

    private final DataPlane rail;
    private final DataPlane host;
    private final HostTopology topology;
    private final int rank;

    /**
     * @param rail the worker's network data plane ({@link moe.a2a.comm.TransportReach#NETWORK})
     * @param host the worker's host-memory data plane ({@link moe.a2a.comm.TransportReach#HOST})
     * @throws IllegalArgumentException naming {@code prepare.member_hosts} when it is not a
     *     topology of {@code worldSize} ranks
     */
    HostGroupsPlane(DataPlane rail, DataPlane host, PrepareGroup prepare, int rank, int worldSize) {
        if (prepare.getMemberHostsCount() != worldSize) {
            throw new IllegalArgumentException(
                    "prepare.member_hosts: "
                            + prepare.getMemberHostsCount()
                            + " hosts (expected: "
                            + worldSize
                            + ", one per rank)");
        }
        try {
            this.topology =
                    HostTopology.of(
                            prepare.getMemberHostsList().stream().mapToInt(h -> h).toArray());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("prepare.member_hosts: " + e.getMessage(), e);
        }
        this.rail = rail;
        this.host = host;
        this.rank = rank;
    }

    HostTopology topology() {
        return topology;
    }

    /** Binds the rail and the host group; the Bound carries the rail's address. */
    Bound bind(PrepareGroup prepare) {
        int g = topology.host(rank);
        int l = topology.local(rank);
        GroupEpoch epoch = PlaneCodec.epoch(prepare, rank, topology.worldSize());
        PlaneBinding bound =
                rail.bind(epoch.as(g, topology.hosts()).withGroupId(groupId(prepare, 2L * l + 1)));
        try {
            host.bind(
                    epoch.as(l, topology.ranksPerHost()).withGroupId(groupId(prepare, 2L * g + 2)));
        } catch (RuntimeException e) {
            rail.drop();
            throw e;
        }
        return PlaneCodec.bound(prepare.getEpoch(), bound);
    }

    /** The transport of the group inside this host. */
    Transport hostTransport() {
        return host.transport();
    }

    /**
     * Connects the rail to the rail addresses among {@code form}'s peers, then the host group. A
     * rail peer this rank could not reach is named in world ranks, as a flat group names it.
     *
     * @throws moe.a2a.comm.PlaneUnavailableException when the host group cannot run here (its
     *     shared-memory folder full, say)
     */
    FormedGroup form(FormGroup form) {
        if (form.getPeersCount() != topology.worldSize()) {
            throw new A2aException(
                    "form.peers: "
                            + form.getPeersCount()
                            + " (expected: "
                            + topology.worldSize()
                            + ", one rail address per rank)");
        }
        int l = topology.local(rank);
        List<String> railPeers = new ArrayList<>();
        for (int g = 0; g < topology.hosts(); g++) {
            railPeers.add(form.getPeers(topology.rank(g, l)));
        }
        GroupPeers peers = PlaneCodec.peers(form);
        Communicator railComm;
        try {
            railComm = rail.form(new GroupPeers(peers.epoch(), railPeers, peers.groupToken()));
        } catch (RuntimeException e) {
            host.drop();
            throw inWorldRanks(e);
        }
        try {
            return FormedGroup.acrossHosts(railComm, host.form(peers), topology);
        } catch (RuntimeException e) {
            railComm.abort(e);
            railComm.close();
            throw e;
        }
    }

    /**
     * {@code failure} of this rank's rail renamed into world ranks where it names a rail peer (the
     * rank of the same local index on that host); else {@code failure} itself.
     */
    private RuntimeException inWorldRanks(RuntimeException failure) {
        int g = PeerFaults.peerOf(failure, topology.host(rank));
        if (g == PeerFaults.NONE) {
            return failure;
        }
        int peer = topology.rank(g, topology.local(rank));
        return PeerFailedException.unreachable(
                rank, peer, "on the rail to host " + g + ": " + failure.getMessage());
    }

    /** Forgets a bound epoch that was not formed. */
    void drop() {
        try {
            rail.drop();
        } finally {
            host.drop();
        }
    }

    private static long groupId(PrepareGroup prepare, long salt) {
        return prepare.getGroupId() ^ (salt * GOLDEN);
    }
}
