package moe.a2a.control.cluster;

import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.stub.StreamObserver;
import java.nio.ByteBuffer;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import moe.a2a.bench.BenchScope;
import moe.a2a.bench.BenchWorkload;
import moe.a2a.bench.RankTimes;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Transport;
import moe.a2a.dispatch.DType;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankStepResult;
import moe.a2a.experts.RoutingInput;
import moe.a2a.protocol.PlacementCodec;
import moe.a2a.protocol.TaskCodec;
import moe.a2a.v1.ActivatePlacement;
import moe.a2a.v1.BenchRankResult;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.Join;
import moe.a2a.v1.ModelSpec;
import moe.a2a.v1.PlacementStaged;
import moe.a2a.v1.StagePlacement;
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
 * <p>Session callbacks arrive on gRPC threads and {@link #submit} on the scheduler thread. One lock
 * guards all state: the {@link Membership}, the {@link GroupFormation}, the {@link PendingTasks} of
 * steps and benchmark runs (none of them thread-safe on their own), and whether the group serves.
 * Listeners are told on the timer thread, outside the lock.
 */
public final class RemoteCluster implements RankGroup {
    private static final Logger LOG = LoggerFactory.getLogger(RemoteCluster.class);

    /** The data planes worker processes can run. */
    public static final Set<Transport> TRANSPORTS = EnumSet.of(Transport.TCP, Transport.NCCL);

    private final ModelConfig model;
    private final Transport transport;
    private final LayerPlacements placements;
    private final int worldSize;
    private final long exchangeTimeoutNs;
    private final long heartbeatTimeoutNs;
    private final ClusterListener listener;
    private final ScheduledExecutorService timer;

    /** Guards every field below, and every call into them. */
    private final Object lock = new Object();

    private final Membership membership;
    private final GroupFormation formation;

    /** Steps and benchmark runs sent and not yet answered by every rank. */
    private final PendingTasks<RankStepResult> pendingSteps;

    private final PendingTasks<RankTimes> pendingBenches;

    /** Placements being staged on every worker; each answer is the bytes that rank loaded. */
    private final PendingTasks<Long> pendingStages;

    private boolean serving;
    private String notServingReason;
    private int rebuilds;

    /**
     * @param placement where the experts live, as this coordinator decided; its world size is the
     *     group's, and every worker is sent it
     * @param transport the data plane the workers must run: {@link Transport#TCP} or {@link
     *     Transport#NCCL}
     */
    public RemoteCluster(
            ModelConfig model,
            ModelSpec spec,
            String fingerprint,
            Placement placement,
            Transport transport,
            long exchangeTimeoutNs,
            long heartbeatTimeoutNs,
            ClusterListener listener) {
        RankGroup.checkPlacement(placement, model);
        final int worldSize = placement.worldSize();
        if (!TRANSPORTS.contains(transport)) {
            throw new IllegalArgumentException(
                    "transport: "
                            + transport
                            + " (expected: one of "
                            + Transport.labels(TRANSPORTS.toArray(Transport[]::new))
                            + ")");
        }
        this.transport = transport;
        this.model = model;
        this.placements = new LayerPlacements(model.layers(), placement);
        this.worldSize = worldSize;
        this.exchangeTimeoutNs = exchangeTimeoutNs;
        this.heartbeatTimeoutNs = heartbeatTimeoutNs;
        this.listener = listener;
        this.membership =
                new Membership(spec, fingerprint, placements, transport, heartbeatTimeoutNs);
        this.formation = new GroupFormation(membership, worldSize, transport, exchangeTimeoutNs);
        this.pendingSteps = new PendingTasks<>(worldSize);
        this.pendingBenches = new PendingTasks<>(worldSize);
        this.pendingStages = new PendingTasks<>(worldSize);
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
    public LayerPlacements placements() {
        return placements;
    }

    /**
     * {@inheritDoc} Each worker loads on a thread of its own and answers PlacementStaged; a lost
     * worker or a broken group fails the staging. A worker that joins meanwhile gets the current
     * placements, and loads the new one when it is activated.
     */
    @Override
    public CompletableFuture<Long> stage(int layer, Placement next) {
        final PendingTasks.Task<Long> staging;
        synchronized (lock) {
            if (!serving) {
                return CompletableFuture.failedFuture(
                        new A2aException("cluster not serving: " + notServingReason));
            }
            staging = pendingStages.open();
            membership.broadcast(
                    ControlMessage.newBuilder()
                            .setStagePlacement(
                                    StagePlacement.newBuilder()
                                            .setStageId(staging.id())
                                            .setLayer(layer)
                                            .setPlacement(PlacementCodec.encode(next)))
                            .build());
        }
        List<CompletableFuture<Long>> parts = staging.parts();
        return CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]))
                .thenApply(ignored -> parts.stream().mapToLong(CompletableFuture::join).sum());
    }

    /**
     * {@inheritDoc} ActivatePlacement goes to every worker on its session, which also carries the
     * steps in order, so every worker switches before the same step.
     */
    @Override
    public void activate(int layer, Placement next) {
        synchronized (lock) {
            placements.set(layer, next);
            membership.broadcast(
                    ControlMessage.newBuilder()
                            .setActivatePlacement(
                                    ActivatePlacement.newBuilder()
                                            .setLayer(layer)
                                            .setPlacement(PlacementCodec.encode(next)))
                            .build());
        }
    }

    @Override
    public int worldSize() {
        return worldSize;
    }

    @Override
    public Transport transport() {
        return transport;
    }

    /** Ranks with a live worker session. */
    @Override
    public int joined() {
        synchronized (lock) {
            return membership.joined();
        }
    }

    /** Ranks that reported ready in the current epoch, while the group serves; 0 once it broke. */
    @Override
    public int healthy() {
        synchronized (lock) {
            return serving ? formation.readyCount() : 0;
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
            WorkerSession session = membership.admit(join, out);
            LOG.info("{} joined ({}/{} ranks)", session, membership.joined(), worldSize);
            if (membership.full()) {
                prepareLocked();
            }
            return session;
        }
    }

    void onMessage(WorkerSession session, WorkerMessage message) {
        session.heard();
        synchronized (lock) {
            if (!membership.holds(session)) {
                return; // a session that already lost its rank
            }
            switch (message.getKindCase()) {
                case BOUND:
                    String malformed = formation.onBound(session.rank, message.getBound());
                    if (malformed != null) {
                        breakLocked(malformed);
                    }
                    break;
                case READY:
                    onReady(session.rank, message.getReady().getEpoch());
                    break;
                case RESULT:
                    pendingSteps.complete(
                            message.getResult().getStepId(),
                            session.rank,
                            TaskCodec.rankStepResult(message.getResult()));
                    break;
                case BENCH_RESULT:
                    onBenchResult(session.rank, message.getBenchResult());
                    break;
                case STAGED:
                    onStaged(session.rank, message.getStaged());
                    break;
                case FAILURE:
                    if (pendingSteps.contains(message.getFailure().getStepId())) {
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
            if (membership.release(session)) {
                breakLocked("rank " + session.rank + " lost (" + session + ": " + cause + ")");
            }
        }
    }

    @Override
    public CompletableFuture<RankStepResult[]> submit(
            int layer,
            DType dtype,
            ByteBuffer[] tokens,
            int[] counts,
            RoutingInput[] routing,
            int[] capacities) {
        final PendingTasks.Task<RankStepResult> step;
        synchronized (lock) {
            if (!serving) {
                return CompletableFuture.failedFuture(
                        new A2aException("cluster not serving: " + notServingReason));
            }
            step = pendingSteps.open();
            for (int r = 0; r < worldSize; r++) {
                membership.send(
                        r,
                        ControlMessage.newBuilder()
                                .setStep(
                                        TaskCodec.stepTask(
                                                step.id(),
                                                formation.epoch(),
                                                layer,
                                                dtype,
                                                tokens[r],
                                                counts[r],
                                                routing[r],
                                                capacities[r],
                                                model))
                                .build());
            }
        }
        // Losing a worker fails the step at once; this deadline only bounds a hung group.
        timer.schedule(
                () -> {
                    synchronized (lock) {
                        if (pendingSteps.contains(step.id())) {
                            breakLocked(
                                    "step " + step.id() + " timed out: some rank never answered");
                        }
                    }
                },
                4 * exchangeTimeoutNs + TimeUnit.SECONDS.toNanos(60),
                TimeUnit.NANOSECONDS);
        return RankResults.all(step.parts(), layer);
    }

    @Override
    public CompletableFuture<List<RankTimes>> bench(
            BenchWorkload workload, BenchScope scope, int warmup, int iters) {
        final PendingTasks.Task<RankTimes> run;
        synchronized (lock) {
            if (!serving) {
                return CompletableFuture.failedFuture(
                        new A2aException("cluster not serving: " + notServingReason));
            }
            run = pendingBenches.open();
            membership.broadcast(
                    ControlMessage.newBuilder()
                            .setBench(TaskCodec.benchTask(run.id(), workload, scope, warmup, iters))
                            .build());
        }
        List<CompletableFuture<RankTimes>> parts = run.parts();
        return CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]))
                .thenApply(ignored -> parts.stream().map(CompletableFuture::join).toList());
    }

    private void onBenchResult(int rank, BenchRankResult res) {
        if (!pendingBenches.contains(res.getBenchId())) {
            return;
        }
        if (!res.getError().isEmpty()) {
            breakLocked("benchmark failed on rank " + rank + ": " + res.getError());
            return;
        }
        pendingBenches.complete(res.getBenchId(), rank, TaskCodec.rankTimes(res));
    }

    private void onStaged(int rank, PlacementStaged staged) {
        if (!staged.getError().isEmpty()) {
            pendingStages.fail(
                    staged.getStageId(),
                    new A2aException(
                            "rank " + rank + " could not stage a placement: " + staged.getError()));
            return;
        }
        pendingStages.complete(staged.getStageId(), rank, staged.getLoadedBytes());
    }

    @Override
    public void close() {
        timer.shutdownNow();
        synchronized (lock) {
            serving = false;
            membership.endAll(Status.UNAVAILABLE.withDescription("control plane shutting down"));
        }
    }

    private void prepareLocked() {
        formation.prepare();
        LOG.info("forming group: epoch={}", formation.epoch());
    }

    private void onReady(int rank, long epoch) {
        if (!formation.onReady(rank, epoch)) {
            return;
        }
        serving = true;
        final long formedIn = formation.formingNanos();
        final long formedEpoch = formation.epoch();
        LOG.info(
                "serving: epoch={}, group formed in {} ms",
                formedEpoch,
                TimeUnit.NANOSECONDS.toMillis(formedIn));
        timer.execute(() -> listener.onServing(formedEpoch, formedIn));
    }

    /**
     * Fails the step in flight, tells every worker to drop the group, and re-forms it if it can.
     */
    private void breakLocked(String reason) {
        boolean wasUp = serving || formation.started();
        serving = false;
        notServingReason = reason;
        A2aException failure = new A2aException(reason);
        pendingSteps.failAll(failure);
        pendingBenches.failAll(failure);
        pendingStages.failAll(failure);
        formation.abort(reason);
        LOG.warn("group broken: epoch={}, reason={}", formation.epoch(), reason);
        if (wasUp) {
            rebuilds++;
        }
        timer.execute(() -> listener.onNotServing(reason));
        if (membership.full()) {
            prepareLocked();
        }
    }

    private void checkHeartbeats() {
        List<WorkerSession> silent;
        synchronized (lock) {
            silent = membership.silentFor(heartbeatTimeoutNs);
        }
        for (WorkerSession s : silent) {
            String cause =
                    "no heartbeat for " + TimeUnit.NANOSECONDS.toMillis(s.silentNanos()) + " ms";
            s.end(Status.UNAVAILABLE.withDescription(cause));
            onSessionEnd(s, cause);
        }
    }
}
