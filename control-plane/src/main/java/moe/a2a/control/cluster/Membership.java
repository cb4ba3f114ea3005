package moe.a2a.control.cluster;

import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import moe.a2a.dispatch.DispatchDType;
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
    private final TransportPolicy policy;
    private final long heartbeatTimeoutNs;
    private final LayerPlacements placements;
    private final @Nullable WorkerSession[] ranks;

    /**
     * Under auto: the device transport the cluster's workers run on GPUs over (NCCL), or null when
     * they run on CPUs. The first worker to join a cluster that holds no rank decides: they run on
     * GPUs when it offers a transport of {@link TransportReach#DEVICES}.
     */
    private @Nullable Transport onDevices;

    Membership(
            ModelSpec spec,
            String fingerprint,
            LayerPlacements placements,
            TransportPolicy policy,
            long heartbeatTimeoutNs) {
        this.spec = spec;
        this.placements = placements;
        this.fingerprint = fingerprint;
        this.policy = policy;
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
        Set<Transport> offered = offered(join);
        if (policy.auto() && heldRanks().length == 0) {
            onDevices =
                    offered.stream()
                            .filter(t -> Transports.reach(t) == TransportReach.DEVICES)
                            .findFirst()
                            .orElse(null);
        }
        Transport required = required();
        if (!offered.contains(required)) {
            throw Status.FAILED_PRECONDITION
                    .withDescription(
                            "join.transports: "
                                    + offered
                                    + " (expected: "
                                    + required
                                    + (!policy.auto()
                                            ? ", this cluster's data plane"
                                            : onDevices != null
                                                    ? ", this cluster's data plane: it runs"
                                                            + " --transport auto and its workers"
                                                            + " are on GPUs"
                                                    : ", this cluster's data plane across hosts"
                                                            + " (it runs --transport auto)")
                                    + ")"
                                    + (join.getGpuProbe().isEmpty()
                                            ? ""
                                            : "; the worker's GPU probe: " + join.getGpuProbe()))
                    .asException();
        }
        if (Transports.reach(required) == TransportReach.HOST) {
            checkSameShmDomain(join);
        }
        int rank = freeRank(join.getPreferredRank());
        if (rank < 0) {
            throw Status.RESOURCE_EXHAUSTED
                    .withDescription(
                            "cluster full: worldSize=" + ranks.length + ", every rank is taken")
                    .asException();
        }
        WorkerSession session =
                new WorkerSession(
                        join.getWorkerId(),
                        rank,
                        offered,
                        join.getHost(),
                        WorkerSession.offers(offered, TransportReach.HOST)
                                ? join.getShmDomain()
                                : "",
                        out);
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
                                        .setTransport(expected(session).label()))
                        .build());
        return session;
    }

    /**
     * What {@code join} offers; none listed means the network transport alone. Labels of no
     * transport on this class path are ignored.
     */
    private static Set<Transport> offered(Join join) {
        Set<Transport> offered = new LinkedHashSet<>();
        if (join.getTransportsCount() == 0) {
            offered.add(TransportPolicy.network());
        }
        for (String label : join.getTransportsList()) {
            for (Transport t : Transports.transports(Transports.all())) {
                if (t.label().equalsIgnoreCase(label)) {
                    offered.add(t);
                }
            }
        }
        return offered;
    }

    /**
     * Under --transport shm: refuses a worker that cannot map the files of the workers holding
     * ranks (another host, pid namespace or shm directory), naming both hosts.
     */
    private void checkSameShmDomain(Join join) throws StatusException {
        String host = join.getHost().isEmpty() ? "an unnamed host" : join.getHost();
        if (join.getShmDomain().isEmpty()) {
            throw Status.FAILED_PRECONDITION
                    .withDescription(
                            "join.shm_domain: empty (worker "
                                    + join.getWorkerId()
                                    + " on "
                                    + host
                                    + " reported no shared-memory domain; expected one: this"
                                    + " cluster runs --transport shm)")
                    .asException();
        }
        for (WorkerSession s : ranks) {
            if (s != null && !s.shmDomain.equals(join.getShmDomain())) {
                throw Status.FAILED_PRECONDITION
                        .withDescription(
                                "join.shm_domain: "
                                        + join.getShmDomain()
                                        + " of worker "
                                        + join.getWorkerId()
                                        + " on "
                                        + host
                                        + " (expected: "
                                        + s.shmDomain
                                        + ", that of rank "
                                        + s.rank
                                        + " on "
                                        + s.hostName()
                                        + "; --transport shm needs every worker on one host,"
                                        + " in one pid namespace, with one shared-memory"
                                        + " directory: run --transport tcp or auto across hosts)")
                        .asException();
            }
        }
    }

    /**
     * The transport {@code session} is told in Accepted: the fixed one, or under auto what the
     * group would run if it formed with the sessions held now.
     */
    private Transport expected(WorkerSession session) {
        if (!policy.auto() || onDevices != null) {
            return required();
        }
        Transport picked = pick(heldRanks());
        return Transports.reach(picked) == TransportReach.HOST ? picked : TransportPolicy.network();
    }

    /** What a worker must offer to be admitted: the fixed transport; under auto nccl on GPUs. */
    private Transport required() {
        return policy.auto() && onDevices != null ? onDevices : policy.required();
    }

    /**
     * The transport of a group of {@code members}: the fixed one, or under auto shm when every
     * member offers it from one shared-memory domain, else tcp (across hosts or not).
     */
    Transport pick(int[] members) {
        return plan(members).transport();
    }

    /**
     * The data plane of a group of {@code members}: the fixed transport; or under auto, nccl when
     * the workers are on GPUs (every member offers it: it was required); shm when every member
     * offers it from one shared-memory domain; a group across hosts when the group holds every
     * rank, every member offers shm, and two or more domains hold the same number of ranks, at
     * least two, each (with FP8 dispatch, which that path does not offer, flat tcp); else flat tcp.
     */
    GroupPlan plan(int[] members) {
        if (!policy.auto()) {
            return GroupPlan.flat(policy.required(), "--transport " + policy.required());
        }
        if (onDevices != null) {
            return GroupPlan.flat(
                    onDevices,
                    "auto: the workers are on GPUs (the first to join offered nccl, as every"
                            + " member must)");
        }
        long nowNanos = System.nanoTime();
        List<String> domains = new ArrayList<>();
        int[] hostOf = new int[members.length];
        for (int i = 0; i < members.length; i++) {
            WorkerSession s = ranks[members[i]];
            if (s == null || !s.offersShm(nowNanos)) {
                return GroupPlan.flat(
                        TransportPolicy.network(),
                        whyTcp(members, "not every member offers shm", nowNanos));
            }
            int d = domains.indexOf(s.shmDomain);
            if (d < 0) {
                d = domains.size();
                domains.add(s.shmDomain);
            }
            hostOf[i] = d;
        }
        if (domains.size() == 1) {
            return GroupPlan.flat(
                    Transports.require(TransportReach.HOST).transport(),
                    "auto: every member on " + ranks[members[0]].hostName() + ", one shm domain");
        }
        int[] count = new int[domains.size()];
        for (int d : hostOf) {
            count[d]++;
        }
        String blocker = null;
        if (members.length != ranks.length) {
            blocker = "the group lacks lost ranks";
        } else if (Arrays.stream(count).anyMatch(c -> c != count[0])) {
            blocker = "the hosts hold different numbers of ranks " + Arrays.toString(count);
        } else if (count[0] < 2) {
            blocker = "one rank a host";
        } else if (!dispatchesAsTokensCame()) {
            blocker = "dispatch dtype " + spec.getDispatchDtype();
        }
        if (blocker != null) {
            return GroupPlan.flat(
                    TransportPolicy.network(),
                    whyTcp(members, "not across hosts: " + blocker, nowNanos));
        }
        return new GroupPlan(
                TransportPolicy.network(),
                hostOf,
                "auto: "
                        + domains.size()
                        + " hosts of "
                        + count[0]
                        + " ranks each, tcp rails between them, shm inside each ("
                        + hostsOf(members, hostOf)
                        + ")");
    }

    /** Whether token rows travel in dispatch as the request sent them (not FP8). */
    private boolean dispatchesAsTokensCame() {
        return spec.getDispatchDtype().isEmpty()
                || DispatchDType.parse("model.dispatch_dtype", spec.getDispatchDtype())
                        == DispatchDType.BF16;
    }

    /** Each host's ranks, for the log. */
    private String hostsOf(int[] members, int[] hostOf) {
        StringBuilder out = new StringBuilder();
        for (int g = 0; g <= Arrays.stream(hostOf).max().getAsInt(); g++) {
            if (g > 0) {
                out.append("; ");
            }
            out.append("host ").append(g).append(" ranks");
            String host = null;
            for (int i = 0; i < members.length; i++) {
                if (hostOf[i] == g) {
                    out.append(' ').append(members[i]);
                    host = ranks[members[i]].hostName();
                }
            }
            out.append(" on ").append(host);
        }
        return out.toString();
    }

    /** Why auto picked flat tcp for {@code members}, for the log. */
    private String whyTcp(int[] members, String reason, long nowNanos) {
        StringBuilder out = new StringBuilder("auto: ").append(reason).append(" (");
        for (int i = 0; i < members.length; i++) {
            WorkerSession s = ranks[members[i]];
            if (i > 0) {
                out.append("; ");
            }
            out.append("rank ").append(members[i]).append(" on ");
            if (s == null) {
                out.append("no worker");
            } else {
                out.append(s.hostName())
                        .append(s.offersShm(nowNanos) ? ", domain " + s.shmDomain : ", no shm");
            }
        }
        return out.append(')').toString();
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

    /** The session holding {@code rank}, or null when none does. */
    @Nullable WorkerSession holder(int rank) {
        return ranks[rank];
    }

    /**
     * {@code rank}'s worker cannot run {@code transport} now. Under auto, shm is planned without it
     * for a retry delay that doubles each time ({@link WorkerSession#withdrawShm}); a fixed
     * transport cannot be, nor can a transport other than shm.
     *
     * @return the retry delay in nanoseconds, or -1 when the transport cannot be planned around
     */
    long withdraw(int rank, String transport, long nowNanos) {
        WorkerSession s = ranks[rank];
        if (s == null
                || !policy.auto()
                || !transport.equals(Transports.require(TransportReach.HOST).transport().label())) {
            return -1;
        }
        return s.withdrawShm(nowNanos);
    }

    /** Whether every rank is held, so the group can form. */
    boolean full() {
        return joined() == ranks.length;
    }

    /** Sends to one rank; only while {@link #full()}. */
    void send(int rank, ControlMessage message) {
        ranks[rank].send(message);
    }

    /** Sends to each of {@code ranks} that has a session. */
    void sendTo(int[] ranks, ControlMessage message) {
        for (int r : ranks) {
            if (this.ranks[r] != null) {
                this.ranks[r].send(message);
            }
        }
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
