package moe.a2a.control.cluster;

import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.stub.StreamObserver;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.LongFunction;
import java.util.stream.IntStream;
import moe.a2a.bench.BenchScope;
import moe.a2a.bench.BenchTaskCodec;
import moe.a2a.bench.CollectiveCase;
import moe.a2a.bench.CollectiveTimes;
import moe.a2a.bench.RankTimes;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Transport;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankStepResult;
import moe.a2a.experts.RoutingInput;
import moe.a2a.kernels.DType;
import moe.a2a.protocol.PlacementCodec;
import moe.a2a.protocol.TaskCodec;
import moe.a2a.v1.ActivatePlacement;
import moe.a2a.v1.BenchRankResult;
import moe.a2a.v1.BenchTask;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.Join;
import moe.a2a.v1.ModelSpec;
import moe.a2a.v1.PlacementStaged;
import moe.a2a.v1.StagePlacement;
import moe.a2a.v1.StepFailure;
import moe.a2a.v1.WorkerMessage;
import moe.a2a.workload.BenchWorkload;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ranks as worker processes, coordinated over their ClusterService sessions. Membership: a worker
 * joins and gets a free rank; once all {@code N} ranks are taken the group is formed (PrepareGroup:
 * every worker listens — over NCCL, rank 0 makes the group's unique id —; FormGroup: every worker
 * connects to its peers, or joins the NCCL group with rank 0's id; GroupReady from all: the cluster
 * serves). The group's transport is fixed, or picked each time it forms ({@link
 * TransportPolicy#AUTO}: shm when every member offers it from one shared-memory domain, else tcp).
 * A lost worker (session ended, heartbeat silent) or a failed step breaks the group: the step in
 * flight fails naming the rank, every other worker abandons its communicator, and the group forms
 * again, with a new epoch, as soon as every rank is taken. Over TCP or shm, when every expert a
 * lost rank hosted has a replica elsewhere, the others form a group at once and serve degraded: the
 * lost rank's slots get share 0 and it takes no tokens; when a worker takes the rank again, the
 * group forms whole and the placements from before the loss come back.
 *
 * <p>Session callbacks arrive on gRPC threads and {@link #submit} on the scheduler thread. One lock
 * guards all state: the {@link Membership}, the {@link GroupFormation}, the {@link PendingTasks} of
 * steps and benchmark runs (none of them thread-safe on their own), and whether the group serves.
 * Listeners are told on the timer thread, outside the lock.
 */
public final class RemoteCluster implements RankGroup {
    private static final Logger LOG = LoggerFactory.getLogger(RemoteCluster.class);

    /** The data planes worker processes can run. */
    public static final Set<Transport> TRANSPORTS =
            EnumSet.of(Transport.TCP, Transport.SHM, Transport.NCCL);

    private final ModelConfig model;
    private final TransportPolicy policy;
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

    private final PendingTasks<BenchRankResult> pendingBenches;

    /** Failures reported for steps still pending, gathered before the group is broken. */
    private final StepFailures stepFailures = new StepFailures();

    /** Placements being staged on every worker; each answer is the bytes that rank loaded. */
    private final PendingTasks<Long> pendingStages;

    private boolean serving;
    private String notServingReason;
    private int rebuilds;

    /** The ranks of the current epoch's group, ascending: every rank unless degraded. */
    private int[] groupRanks;

    /**
     * Each layer's placement from before ranks were lost, restored once the group is whole again;
     * null while whole.
     */
    private @Nullable List<Placement> beforeLoss;

    /**
     * @param placement where the experts live, as this coordinator decided; its world size is the
     *     group's, and every worker is sent it
     * @param transport the data plane the workers must run: one of {@link #TRANSPORTS}
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
        this(
                model,
                spec,
                fingerprint,
                placement,
                TransportPolicy.of(transport),
                exchangeTimeoutNs,
                heartbeatTimeoutNs,
                listener);
    }

    /**
     * @param placement where the experts live, as this coordinator decided; its world size is the
     *     group's, and every worker is sent it
     * @param policy the data plane the workers must run, or auto: shm for a group of one host, tcp
     *     across hosts, picked each time the group forms
     */
    public RemoteCluster(
            ModelConfig model,
            ModelSpec spec,
            String fingerprint,
            Placement placement,
            TransportPolicy policy,
            long exchangeTimeoutNs,
            long heartbeatTimeoutNs,
            ClusterListener listener) {
        RankGroup.checkPlacement(placement, model);
        final int worldSize = placement.worldSize();
        this.policy = policy;
        this.model = model;
        this.placements = new LayerPlacements(model.layers(), placement);
        this.worldSize = worldSize;
        this.exchangeTimeoutNs = exchangeTimeoutNs;
        this.heartbeatTimeoutNs = heartbeatTimeoutNs;
        this.listener = listener;
        this.membership = new Membership(spec, fingerprint, placements, policy, heartbeatTimeoutNs);
        this.formation = new GroupFormation(membership, worldSize, exchangeTimeoutNs);
        this.pendingSteps = new PendingTasks<>(worldSize);
        this.pendingBenches = new PendingTasks<>(worldSize);
        this.pendingStages = new PendingTasks<>(worldSize);
        this.notServingReason = "waiting for " + worldSize + " workers to join";
        this.groupRanks = IntStream.range(0, worldSize).toArray();
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
            switchLocked(layer, next);
        }
    }

    @Override
    public int worldSize() {
        return worldSize;
    }

    /**
     * The fixed transport; under auto the current (or last) epoch's, tcp before the group first
     * forms.
     */
    @Override
    public Transport transport() {
        if (policy.fixed() != null) {
            return policy.fixed();
        }
        synchronized (lock) {
            return formation.transport();
        }
    }

    /**
     * The hosts the current (or last) epoch's group spans, tcp between them and shm inside each; 0
     * for one flat group.
     */
    @Override
    public int hosts() {
        synchronized (lock) {
            return formation.plan().hosts();
        }
    }

    /** The transport policy this cluster was started with. */
    public TransportPolicy policy() {
        return policy;
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

    @Override
    public int[] servingRanks() {
        synchronized (lock) {
            return groupRanks.clone();
        }
    }

    @Override
    public int degradedRanks() {
        synchronized (lock) {
            return serving ? worldSize - groupRanks.length : 0;
        }
    }

    /** Admits a worker or refuses it with the status to end its call with. */
    WorkerSession join(Join join, StreamObserver<ControlMessage> out) throws StatusException {
        synchronized (lock) {
            WorkerSession session = membership.admit(join, out);
            LOG.info("{} joined ({}/{} ranks)", session, membership.joined(), worldSize);
            if (membership.full()) {
                if (beforeLoss != null) {
                    // serving without lost ranks: re-form whole, so the returning rank serves
                    breakLocked("rank " + session.rank + " returned: forming the whole group");
                } else {
                    prepareLocked(IntStream.range(0, worldSize).toArray());
                }
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
                    onStepFailure(session.rank, message.getFailure());
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
                if (Arrays.binarySearch(groupRanks, r) < 0) {
                    if (counts[r] != 0) {
                        pendingSteps.fail(
                                step.id(),
                                new A2aException("rank " + r + " is lost; its tokens had no home"));
                        return RankResults.all(step.parts(), layer);
                    }
                    pendingSteps.complete(step.id(), r, idle());
                    continue;
                }
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
        return benchTask(
                id -> BenchTaskCodec.benchTask(id, workload, scope, warmup, iters),
                BenchTaskCodec::rankTimes);
    }

    @Override
    public CompletableFuture<List<CollectiveTimes>> benchCollective(
            CollectiveCase c, int warmup, int iters) {
        return benchTask(
                id -> BenchTaskCodec.collectiveBenchTask(id, c, warmup, iters),
                BenchTaskCodec::collectiveTimes);
    }

    /** Sends a BenchTask to every rank; completes with every rank's answer, decoded. */
    private <T> CompletableFuture<List<T>> benchTask(
            LongFunction<BenchTask> task, Function<BenchRankResult, T> decode) {
        final PendingTasks.Task<BenchRankResult> run;
        synchronized (lock) {
            if (!serving) {
                return CompletableFuture.failedFuture(
                        new A2aException("cluster not serving: " + notServingReason));
            }
            run = pendingBenches.open();
            membership.broadcast(
                    ControlMessage.newBuilder().setBench(task.apply(run.id())).build());
        }
        List<CompletableFuture<BenchRankResult>> parts = run.parts();
        return CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]))
                .thenApply(
                        ignored ->
                                parts.stream().map(CompletableFuture::join).map(decode).toList());
    }

    private void onStepFailure(int rank, StepFailure failure) {
        long step = failure.getStepId();
        if (!pendingSteps.contains(step)) {
            return;
        }
        if (stepFailures.report(step, rank, failure.getMessage())) {
            timer.schedule(
                    () -> {
                        synchronized (lock) {
                            breakOnStepFailureLocked(step);
                        }
                    },
                    StepFailures.SETTLE_NANOS,
                    TimeUnit.NANOSECONDS);
        }
        if (stepFailures.allReported(step, groupRanks.length)) {
            breakOnStepFailureLocked(step);
        }
    }

    private void breakOnStepFailureLocked(long step) {
        String reason = stepFailures.take(step);
        if (reason != null && pendingSteps.contains(step)) {
            breakLocked(reason);
        }
    }

    private void onBenchResult(int rank, BenchRankResult res) {
        if (!pendingBenches.contains(res.getBenchId())) {
            return;
        }
        if (!res.getError().isEmpty()) {
            breakLocked("benchmark failed on rank " + rank + ": " + res.getError());
            return;
        }
        pendingBenches.complete(res.getBenchId(), rank, res);
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

    /** A rank outside the group's answer to a step: no tokens, no traffic. */
    private RankStepResult idle() {
        return new RankStepResult(
                ByteBuffer.allocate(0),
                new long[worldSize],
                new long[model.experts()],
                new long[model.experts()],
                0,
                new long[worldSize],
                new long[worldSize],
                0,
                0,
                0,
                0);
    }

    private void prepareLocked(int[] ranks) {
        groupRanks = ranks.clone();
        GroupPlan plan = membership.plan(ranks);
        formation.prepare(ranks, plan);
        LOG.info(
                "forming group: epoch={}, ranks={}, transport={} ({})",
                formation.epoch(),
                Arrays.toString(ranks),
                plan,
                plan.why());
    }

    /**
     * Serves without the ranks that have no worker when every expert they hosted has a replica on
     * another rank (not over NCCL): each layer's placement gives their slots share 0, and the
     * others form a group of their own. Otherwise the group waits for the ranks to be taken again.
     */
    private void degradeLocked(String reason) {
        int[] held = membership.heldRanks();
        if (formation.transport() == Transport.NCCL || held.length == 0) {
            return;
        }
        boolean[] lost = new boolean[worldSize];
        Arrays.fill(lost, true);
        for (int r : held) {
            lost[r] = false;
        }
        List<Placement> whole = beforeLoss != null ? beforeLoss : placements.all();
        List<Placement> next = new ArrayList<>();
        for (int layer = 0; layer < whole.size(); layer++) {
            Placement without = whole.get(layer).without(lost, placements.get(layer).version() + 1);
            if (without == null) {
                LOG.warn(
                        "cannot serve without the lost ranks: layer {} has an expert only they host;"
                                + " waiting for them to be taken again",
                        layer);
                return;
            }
            next.add(without);
        }
        beforeLoss = whole;
        for (int layer = 0; layer < next.size(); layer++) {
            switchLocked(layer, next.get(layer));
        }
        LOG.warn(
                "degraded: serving with ranks {} of {} ({}); their replicas take the lost ranks' tokens",
                Arrays.toString(held),
                worldSize,
                reason);
        prepareLocked(held);
    }

    /** Sends every worker a layer's new placement; each installs it before its next step. */
    private void switchLocked(int layer, Placement next) {
        placements.set(layer, next);
        membership.broadcast(
                ControlMessage.newBuilder()
                        .setActivatePlacement(
                                ActivatePlacement.newBuilder()
                                        .setLayer(layer)
                                        .setPlacement(PlacementCodec.encode(next)))
                        .build());
    }

    private void onReady(int rank, long epoch) {
        if (!formation.onReady(rank, epoch)) {
            return;
        }
        if (beforeLoss != null && groupRanks.length == worldSize) {
            for (int layer = 0; layer < beforeLoss.size(); layer++) {
                switchLocked(
                        layer,
                        beforeLoss.get(layer).withVersion(placements.get(layer).version() + 1));
            }
            beforeLoss = null;
            LOG.info("whole again: every rank takes its slots' shares as before the loss");
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
        stepFailures.clear();
        pendingBenches.failAll(failure);
        pendingStages.failAll(failure);
        formation.abort(reason);
        LOG.warn("group broken: epoch={}, reason={}", formation.epoch(), reason);
        if (wasUp) {
            rebuilds++;
        }
        timer.execute(() -> listener.onNotServing(reason));
        if (membership.full()) {
            prepareLocked(IntStream.range(0, worldSize).toArray());
        } else {
            degradeLocked(reason);
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
