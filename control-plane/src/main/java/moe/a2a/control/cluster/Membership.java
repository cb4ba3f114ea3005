package moe.a2a.control.cluster;

import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.Transport;
import moe.a2a.protocol.PlacementCodec;
import moe.a2a.v1.Accepted;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.Join;
import moe.a2a.v1.ModelSpec;
import org.jspecify.annotations.Nullable;

/**
 * The worker sessions that hold the cluster's ranks: admits a joining worker to a free rank (or
 * refuses it with the status its call must end with), and reaches the ranks' sessions. Not
 * thread-safe: guarded by {@link RemoteCluster}'s lock.
 */
final class Membership {
    private final ModelSpec spec;
    private final String fingerprint;
    private final Transport transport;
    private final long heartbeatTimeoutNs;
    private final LayerPlacements placements;
    private final @Nullable WorkerSession[] ranks;

    Membership(
            ModelSpec spec,
            String fingerprint,
            LayerPlacements placements,
            Transport transport,
            long heartbeatTimeoutNs) {
        this.spec = spec;
        this.placements = placements;
        this.fingerprint = fingerprint;
        this.transport = transport;
        this.heartbeatTimeoutNs = heartbeatTimeoutNs;
        this.ranks = new WorkerSession[placements.get(0).worldSize()];
    }

    /** Gives the worker a free rank, preferring the one it asks for, and sends it Accepted. */
    WorkerSession admit(Join join, StreamObserver<ControlMessage> out) throws StatusException {
        if (!join.getExpectedModel().isEmpty() && !join.getExpectedModel().equals(fingerprint)) {
            throw Status.FAILED_PRECONDITION
                    .withDescription(
                            "join.expected_model: "
                                    + join.getExpectedModel()
                                    + " (expected: "
                                    + fingerprint
                                    + ", the model this cluster serves)")
                    .asException();
        }
        for (WorkerSession s : ranks) {
            if (s != null && s.workerId.equals(join.getWorkerId())) {
                throw Status.ALREADY_EXISTS
                        .withDescription(
                                "join.worker_id: "
                                        + join.getWorkerId()
                                        + " already holds rank "
                                        + s.rank)
                        .asException();
            }
        }
        List<String> offered =
                join.getTransportsCount() == 0
                        ? List.of(Transport.TCP.label())
                        : join.getTransportsList();
        if (!offered.contains(transport.label())) {
            throw Status.FAILED_PRECONDITION
                    .withDescription(
                            "join.transports: "
                                    + offered
                                    + " (expected: "
                                    + transport
                                    + ", this cluster's data plane)"
                                    + (join.getGpuProbe().isEmpty()
                                            ? ""
                                            : "; the worker's GPU probe: " + join.getGpuProbe()))
                    .asException();
        }
        int rank = freeRank(join.getPreferredRank());
        if (rank < 0) {
            throw Status.RESOURCE_EXHAUSTED
                    .withDescription(
                            "cluster full: worldSize=" + ranks.length + ", every rank is taken")
                    .asException();
        }
        WorkerSession session = new WorkerSession(join.getWorkerId(), rank, out);
        ranks[rank] = session;
        session.send(
                ControlMessage.newBuilder()
                        .setAccepted(
                                Accepted.newBuilder()
                                        .setRank(rank)
                                        .setWorldSize(ranks.length)
                                        .setModel(spec)
                                        .setModelFingerprint(fingerprint)
                                        .addAllPlacements(
                                                placements.all().stream()
                                                        .map(PlacementCodec::encode)
                                                        .toList())
                                        .setHeartbeatTimeoutS(
                                                (int)
                                                        Math.max(
                                                                1,
                                                                TimeUnit.NANOSECONDS.toSeconds(
                                                                        heartbeatTimeoutNs)))
                                        .setTransport(transport.label()))
                        .build());
        return session;
    }

    /** Whether the session still holds its rank (it may have lost it and been replaced). */
    boolean holds(WorkerSession session) {
        return ranks[session.rank] == session;
    }

    /**
     * Frees the session's rank.
     *
     * @return false if the session no longer held it
     */
    boolean release(WorkerSession session) {
        if (!holds(session)) {
            return false;
        }
        ranks[session.rank] = null;
        return true;
    }

    /** Ranks with a live worker session. */
    int joined() {
        int n = 0;
        for (WorkerSession s : ranks) {
            n += s != null ? 1 : 0;
        }
        return n;
    }

    /** The ranks with a live worker session, ascending. */
    int[] heldRanks() {
        int[] held = new int[joined()];
        int next = 0;
        for (int r = 0; r < ranks.length; r++) {
            if (ranks[r] != null) {
                held[next++] = r;
            }
        }
        return held;
    }

    /** Whether every rank is held, so the group can form. */
    boolean full() {
        return joined() == ranks.length;
    }

    /** Sends to one rank; only while {@link #full()}. */
    void send(int rank, ControlMessage message) {
        ranks[rank].send(message);
    }

    /** Sends to every rank that has a session. */
    void broadcast(ControlMessage message) {
        for (WorkerSession s : ranks) {
            if (s != null) {
                s.send(message);
            }
        }
    }

    /** Sessions not heard from for longer than {@code timeoutNs}. */
    List<WorkerSession> silentFor(long timeoutNs) {
        List<WorkerSession> silent = new ArrayList<>();
        for (WorkerSession s : ranks) {
            if (s != null && s.silentNanos() > timeoutNs) {
                silent.add(s);
            }
        }
        return silent;
    }

    /** Ends every session's call from this side. */
    void endAll(Status status) {
        for (WorkerSession s : ranks) {
            if (s != null) {
                s.end(status);
            }
        }
    }

    private int freeRank(int preferred) {
        if (preferred >= 0 && preferred < ranks.length && ranks[preferred] == null) {
            return preferred;
        }
        for (int r = 0; r < ranks.length; r++) {
            if (ranks[r] == null) {
                return r;
            }
        }
        return -1;
    }
}
