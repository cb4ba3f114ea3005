package moe.a2a.control.cluster;

import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.stub.StreamObserver;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import moe.a2a.bench.BenchScope;
import moe.a2a.bench.BenchWorkload;
import moe.a2a.bench.RankTimes;
import moe.a2a.comm.A2aException;
import moe.a2a.dispatch.DType;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankStepResult;
import moe.a2a.experts.RoutingInput;
import moe.a2a.v1.AbortGroup;
import moe.a2a.v1.Accepted;
import moe.a2a.v1.BenchRankResult;
import moe.a2a.v1.BenchTask;
import moe.a2a.v1.Bound;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.FormGroup;
import moe.a2a.v1.Join;
import moe.a2a.v1.ModelSpec;
import moe.a2a.v1.PrepareGroup;
import moe.a2a.v1.StepResult;
import moe.a2a.v1.StepTask;
import moe.a2a.v1.Tensor;
import moe.a2a.v1.TopK;
import moe.a2a.v1.WorkerMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ranks as worker processes, coordinated over their ClusterService sessions. Membership: a worker
 * joins and gets a free rank; once all {@code N} ranks are taken the group is formed (PrepareGroup:
 * every worker listens — over NCCL, rank 0 makes the group's unique id —; FormGroup: every worker
 * connects to its peers, or joins the NCCL group with rank 0's id; GroupReady from all: the cluster
 * serves). A lost worker (session ended, heartbeat silent) or a failed step breaks the group: the
 * step in flight fails naming the rank, every other worker abandons its communicator, and the group
 * forms again, with a new epoch, as soon as every rank is taken.
 *
 * <p>Session callbacks arrive on gRPC threads and {@link #step} on the scheduler thread; all state
 * is guarded by one lock, and listeners are told on a separate thread.
 */
public final class RemoteCluster implements RankGroup {
    private static final Logger LOG = LoggerFactory.getLogger(RemoteCluster.class);
    static final List<String> TRANSPORTS = List.of("tcp", "nccl");

    /** {@code NCCL_UNIQUE_ID_BYTES}. */
    static final int NCCL_UNIQUE_ID_BYTES = 128;

    private final ModelConfig model;
    private final ModelSpec spec;
    private final String fingerprint;
    private final String transport;
    private final Placement placement;
    private final int worldSize;
    private final long exchangeTimeoutNs;
    private final long heartbeatTimeoutNs;
    private final ClusterListener listener;
    private final ScheduledExecutorService timer;
    private final SecureRandom random = new SecureRandom();
    private final Object lock = new Object();
    private final WorkerSession[] ranks;
    private long epoch;
    private String[] bound;
    private byte[] ncclUniqueId;
    private int boundCount;
    private boolean[] ready;
    private int readyCount;
    private boolean serving;
    private long formStartNanos;
    private String notServingReason;
    private long nextStepId;

    /** Steps sent and not yet answered by every rank, by step id, in order. */
    private final Map<Long, List<CompletableFuture<RankStepResult>>> pendingSteps =
            new LinkedHashMap<>();

    private int rebuilds;
    private long nextBenchId;

    /** Benchmark runs sent and not yet answered by every rank, by bench id. */
    private final Map<Long, List<CompletableFuture<RankTimes>>> pendingBenches =
            new LinkedHashMap<>();

    /**
     * @param transport the data plane the workers must run: {@code tcp} or {@code nccl}
     */
    public RemoteCluster(
            ModelConfig model,
            ModelSpec spec,
            String fingerprint,
            int worldSize,
            String transport,
            long exchangeTimeoutNs,
            long heartbeatTimeoutNs,
            ClusterListener listener) {
        if (worldSize <= 0) {
            throw new IllegalArgumentException("worldSize: " + worldSize + " (expected: > 0)");
        }
        if (!TRANSPORTS.contains(transport)) {
            throw new IllegalArgumentException(
                    "transport: " + transport + " (expected: one of " + TRANSPORTS + ")");
        }
        this.transport = transport;
        this.model = model;
        this.spec = spec;
        this.fingerprint = fingerprint;
        this.placement = Placement.contiguous(model.experts(), worldSize);
        this.worldSize = worldSize;
        this.exchangeTimeoutNs = exchangeTimeoutNs;
        this.heartbeatTimeoutNs = heartbeatTimeoutNs;
        this.listener = listener;
        this.ranks = new WorkerSession[worldSize];
        this.notServingReason = "waiting for " + worldSize + " workers to join";
        this.timer =
                Executors.newSingleThreadScheduledExecutor(
                        r -> {
                            Thread t = new Thread(r, "moe-a2a-cluster-timer");
                            t.setDaemon(true);
                            return t;
                        });
        long periodNs = Math.max(TimeUnit.MILLISECONDS.toNanos(50), heartbeatTimeoutNs / 4);
        timer.scheduleAtFixedRate(this::checkHeartbeats, periodNs, periodNs, TimeUnit.NANOSECONDS);
    }

    @Override
    public ModelConfig model() {
        return model;
    }

    @Override
    public Placement placement() {
        return placement;
    }

    @Override
    public int worldSize() {
        return worldSize;
    }

    @Override
    public String transport() {
        return transport;
    }

    /** Ranks with a live worker session. */
    @Override
    public int joined() {
        synchronized (lock) {
            int n = 0;
            for (WorkerSession s : ranks) {
                n += s != null ? 1 : 0;
            }
            return n;
        }
    }

    /** Ranks that reported ready in the current epoch, while the group serves; 0 once it broke. */
    @Override
    public int healthy() {
        synchronized (lock) {
            return serving ? readyCount : 0;
        }
    }

    /** Times the group was broken and had to form again. */
    @Override
    public int rebuilds() {
        synchronized (lock) {
            return rebuilds;
        }
    }

    /** Admits a worker or refuses it with the status to end its call with. */
    WorkerSession join(Join join, StreamObserver<ControlMessage> out) throws StatusException {
        synchronized (lock) {
            if (!join.getExpectedModel().isEmpty()
                    && !join.getExpectedModel().equals(fingerprint)) {
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
                    join.getTransportsCount() == 0 ? List.of("tcp") : join.getTransportsList();
            if (!offered.contains(transport)) {
                throw Status.FAILED_PRECONDITION
                        .withDescription(
                                "join.transports: "
                                        + offered
                                        + " (expected: "
                                        + transport
                                        + ", this cluster's data plane)"
                                        + (join.getGpuProbe().isEmpty()
                                                ? ""
                                                : "; the worker's GPU probe: "
                                                        + join.getGpuProbe()))
                        .asException();
            }
            int rank = freeRank(join.getPreferredRank());
            if (rank < 0) {
                throw Status.RESOURCE_EXHAUSTED
                        .withDescription(
                                "cluster full: worldSize=" + worldSize + ", every rank is taken")
                        .asException();
            }
            WorkerSession session = new WorkerSession(join.getWorkerId(), rank, out);
            ranks[rank] = session;
            session.send(
                    ControlMessage.newBuilder()
                            .setAccepted(
                                    Accepted.newBuilder()
                                            .setRank(rank)
                                            .setWorldSize(worldSize)
                                            .setModel(spec)
                                            .setModelFingerprint(fingerprint)
                                            .setHeartbeatTimeoutS(
                                                    (int)
                                                            Math.max(
                                                                    1,
                                                                    TimeUnit.NANOSECONDS.toSeconds(
                                                                            heartbeatTimeoutNs)))
                                            .setTransport(transport))
                            .build());
            LOG.info("{} joined ({}/{} ranks)", session, joined(), worldSize);
            if (joined() == worldSize) {
                prepareLocked();
            }
            return session;
        }
    }

    void onMessage(WorkerSession session, WorkerMessage message) {
        session.heard();
        synchronized (lock) {
            if (ranks[session.rank] != session) {
                return; // a session that already lost its rank
            }
            switch (message.getKindCase()) {
                case BOUND:
                    onBound(session, message.getBound());
                    break;
                case READY:
                    onReady(session, message.getReady().getEpoch());
                    break;
                case RESULT:
                    onResult(session.rank, message.getResult());
                    break;
                case BENCH_RESULT:
                    onBenchResult(session.rank, message.getBenchResult());
                    break;
                case FAILURE:
                    if (pendingSteps.containsKey(message.getFailure().getStepId())) {
                        breakLocked(
                                "step "
                                        + message.getFailure().getStepId()
                                        + " failed on rank "
                                        + session.rank
                                        + ": "
                                        + message.getFailure().getMessage());
                    }
                    break;
                default:
                    break; // heartbeats only refresh the session
            }
        }
    }

    void onSessionEnd(WorkerSession session, String cause) {
        synchronized (lock) {
            if (ranks[session.rank] != session) {
                return;
            }
            ranks[session.rank] = null;
            breakLocked("rank " + session.rank + " lost (" + session + ": " + cause + ")");
        }
    }

    @Override
    public CompletableFuture<RankStepResult[]> submit(
            int layer, DType dtype, ByteBuffer[] tokens, int[] counts, RoutingInput[] routing) {
        final int rowBytes = model.hidden() * dtype.sizeBytes();
        List<CompletableFuture<RankStepResult>> parts = new ArrayList<>(worldSize);
        final long stepId;
        synchronized (lock) {
            if (!serving) {
                return CompletableFuture.failedFuture(
                        new A2aException("cluster not serving: " + notServingReason));
            }
            stepId = nextStepId++;
            for (int r = 0; r < worldSize; r++) {
                parts.add(new CompletableFuture<>());
            }
            pendingSteps.put(stepId, parts);
            for (int r = 0; r < worldSize; r++) {
                ranks[r].send(
                        ControlMessage.newBuilder()
                                .setStep(
                                        task(
                                                stepId,
                                                layer,
                                                dtype,
                                                tokens[r],
                                                counts[r] * rowBytes,
                                                counts[r],
                                                routing[r]))
                                .build());
            }
        }
        // Losing a worker fails the step at once; this deadline only bounds a hung group.
        timer.schedule(
                () -> {
                    synchronized (lock) {
                        if (pendingSteps.containsKey(stepId)) {
                            breakLocked("step " + stepId + " timed out: some rank never answered");
                        }
                    }
                },
                4 * exchangeTimeoutNs + TimeUnit.SECONDS.toNanos(60),
                TimeUnit.NANOSECONDS);
        return RankResults.all(parts, layer);
    }

    @Override
    public CompletableFuture<List<RankTimes>> bench(
            BenchWorkload workload, BenchScope scope, int warmup, int iters) {
        List<CompletableFuture<RankTimes>> parts = new ArrayList<>(worldSize);
        synchronized (lock) {
            if (!serving) {
                return CompletableFuture.failedFuture(
                        new A2aException("cluster not serving: " + notServingReason));
            }
            long id = nextBenchId++;
            for (int r = 0; r < worldSize; r++) {
                parts.add(new CompletableFuture<>());
            }
            pendingBenches.put(id, parts);
            BenchTask task =
                    BenchTask.newBuilder()
                            .setBenchId(id)
                            .setWorkload(workload.name())
                            .setScope(scope.name())
                            .setWarmup(warmup)
                            .setIters(iters)
                            .build();
            for (WorkerSession s : ranks) {
                s.send(ControlMessage.newBuilder().setBench(task).build());
            }
        }
        return CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]))
                .thenApply(ignored -> parts.stream().map(CompletableFuture::join).toList());
    }

    private void onBenchResult(int rank, BenchRankResult res) {
        List<CompletableFuture<RankTimes>> parts = pendingBenches.get(res.getBenchId());
        if (parts == null) {
            return;
        }
        if (!res.getError().isEmpty()) {
            breakLocked("benchmark failed on rank " + rank + ": " + res.getError());
            return;
        }
        parts.get(rank)
                .complete(
                        new RankTimes(
                                toArray(res.getDispatchNsList()),
                                toArray(res.getCombineNsList()),
                                toArray(res.getBarrierNsList()),
                                res.getOk()));
        if (parts.stream().allMatch(CompletableFuture::isDone)) {
            pendingBenches.remove(res.getBenchId());
        }
    }

    private void onResult(int rank, StepResult res) {
        List<CompletableFuture<RankStepResult>> parts = pendingSteps.get(res.getStepId());
        if (parts == null) {
            return;
        }
        parts.get(rank)
                .complete(
                        new RankStepResult(
                                res.getOutput()
                                        .asReadOnlyByteBuffer()
                                        .order(ByteOrder.LITTLE_ENDIAN),
                                toArray(res.getTokensPerRankList()),
                                toArray(res.getTokensPerExpertList()),
                                res.getRecvTokens(),
                                toArray(res.getBytesSentList()),
                                toArray(res.getBytesReceivedList()),
                                res.getRouteNs(),
                                res.getDispatchNs(),
                                res.getExpertNs(),
                                res.getCombineNs()));
        for (CompletableFuture<RankStepResult> part : parts) {
            if (!part.isDone()) {
                return;
            }
        }
        pendingSteps.remove(res.getStepId());
    }

    @Override
    public void close() {
        timer.shutdownNow();
        synchronized (lock) {
            serving = false;
            for (WorkerSession s : ranks) {
                if (s != null) {
                    s.end(Status.UNAVAILABLE.withDescription("control plane shutting down"));
                }
            }
        }
    }

    private int freeRank(int preferred) {
        if (preferred >= 0 && preferred < worldSize && ranks[preferred] == null) {
            return preferred;
        }
        for (int r = 0; r < worldSize; r++) {
            if (ranks[r] == null) {
                return r;
            }
        }
        return -1;
    }

    private void prepareLocked() {
        epoch++;
        bound = new String[worldSize];
        ncclUniqueId = null;
        boundCount = 0;
        ready = new boolean[worldSize];
        readyCount = 0;
        formStartNanos = System.nanoTime();
        PrepareGroup prepare =
                PrepareGroup.newBuilder()
                        .setEpoch(epoch)
                        .setGroupId(random.nextLong())
                        .setExchangeTimeoutMs(TimeUnit.NANOSECONDS.toMillis(exchangeTimeoutNs))
                        .build();
        for (WorkerSession s : ranks) {
            s.send(ControlMessage.newBuilder().setPrepare(prepare).build());
        }
        LOG.info("forming group: epoch={}", epoch);
    }

    private void onBound(WorkerSession session, Bound b) {
        if (b.getEpoch() != epoch || bound[session.rank] != null) {
            return;
        }
        if (transport.equals("nccl") && session.rank == 0) {
            if (b.getNcclUniqueId().size() != NCCL_UNIQUE_ID_BYTES) {
                breakLocked(
                        "rank 0's bound.nccl_unique_id: "
                                + b.getNcclUniqueId().size()
                                + " bytes (expected: "
                                + NCCL_UNIQUE_ID_BYTES
                                + ")");
                return;
            }
            ncclUniqueId = b.getNcclUniqueId().toByteArray();
        }
        bound[session.rank] = b.getDataAddress();
        if (++boundCount == worldSize) {
            FormGroup.Builder builder =
                    FormGroup.newBuilder().setEpoch(epoch).addAllPeers(List.of(bound));
            if (ncclUniqueId != null) {
                builder.setNcclUniqueId(ByteString.copyFrom(ncclUniqueId));
            }
            FormGroup form = builder.build();
            for (WorkerSession s : ranks) {
                s.send(ControlMessage.newBuilder().setForm(form).build());
            }
        }
    }

    private void onReady(WorkerSession session, long e) {
        if (e != epoch || ready[session.rank]) {
            return;
        }
        ready[session.rank] = true;
        if (++readyCount == worldSize) {
            serving = true;
            final long formedIn = System.nanoTime() - formStartNanos;
            final long formedEpoch = epoch;
            LOG.info(
                    "serving: epoch={}, group formed in {} ms",
                    formedEpoch,
                    TimeUnit.NANOSECONDS.toMillis(formedIn));
            timer.execute(() -> listener.onServing(formedEpoch, formedIn));
        }
    }

    /**
     * Fails the step in flight, tells every worker to drop the group, and re-forms it if it can.
     */
    private void breakLocked(String reason) {
        boolean wasUp = serving || readyCount > 0 || boundCount > 0;
        serving = false;
        notServingReason = reason;
        A2aException failure = new A2aException(reason);
        for (List<CompletableFuture<RankStepResult>> parts : pendingSteps.values()) {
            for (CompletableFuture<RankStepResult> part : parts) {
                part.completeExceptionally(failure);
            }
        }
        pendingSteps.clear();
        for (List<CompletableFuture<RankTimes>> parts : pendingBenches.values()) {
            for (CompletableFuture<RankTimes> part : parts) {
                part.completeExceptionally(failure);
            }
        }
        pendingBenches.clear();
        ControlMessage abort =
                ControlMessage.newBuilder()
                        .setAbort(AbortGroup.newBuilder().setEpoch(epoch).setReason(reason))
                        .build();
        for (WorkerSession s : ranks) {
            if (s != null) {
                s.send(abort);
            }
        }
        LOG.warn("group broken: epoch={}, reason={}", epoch, reason);
        if (wasUp) {
            rebuilds++;
        }
        timer.execute(() -> listener.onNotServing(reason));
        if (joined() == worldSize) {
            prepareLocked();
        }
    }

    private void checkHeartbeats() {
        List<WorkerSession> silent = new ArrayList<>();
        synchronized (lock) {
            for (WorkerSession s : ranks) {
                if (s != null && s.silentNanos() > heartbeatTimeoutNs) {
                    silent.add(s);
                }
            }
        }
        for (WorkerSession s : silent) {
            String cause =
                    "no heartbeat for " + TimeUnit.NANOSECONDS.toMillis(s.silentNanos()) + " ms";
            s.end(Status.UNAVAILABLE.withDescription(cause));
            onSessionEnd(s, cause);
        }
    }

    private StepTask task(
            long stepId,
            int layer,
            DType dtype,
            ByteBuffer tokens,
            int bytes,
            int count,
            RoutingInput routing) {
        StepTask.Builder b =
                StepTask.newBuilder()
                        .setStepId(stepId)
                        .setEpoch(epoch)
                        .setLayer(layer)
                        .setDtype(moe.a2a.control.grpc.TensorCodec.wire(dtype))
                        .setNumTokens(count)
                        .setTokens(ByteString.copyFrom(tokens.duplicate().clear().limit(bytes)));
        if (routing instanceof RoutingInput.TopK topk) {
            TopK.Builder t = TopK.newBuilder().setK(model.topK());
            for (int i = 0; i < count * model.topK(); i++) {
                t.addExpertIds(topk.ids()[i]).addWeights(topk.weights()[i]);
            }
            b.setTopk(t);
        } else if (routing instanceof RoutingInput.Logits logits) {
            ByteBuffer raw =
                    ByteBuffer.allocate(count * model.experts() * Float.BYTES)
                            .order(ByteOrder.LITTLE_ENDIAN);
            raw.asFloatBuffer().put(logits.logits(), 0, count * model.experts());
            b.setRouterLogits(
                    Tensor.newBuilder()
                            .setDtype(moe.a2a.v1.DType.FP32)
                            .addShape(count)
                            .addShape(model.experts())
                            .setData(ByteString.copyFrom(raw.array())));
        }
        return b.build();
    }

    private static long[] toArray(List<Long> values) {
        long[] out = new long[values.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = values.get(i);
        }
        return out;
    }
}
