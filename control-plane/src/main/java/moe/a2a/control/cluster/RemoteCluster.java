package moe.a2a.control.cluster;

import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.stub.StreamObserver;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Transport;
import moe.a2a.comm.Transports;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankStepResult;
import moe.a2a.experts.RoutingInput;
import moe.a2a.experts.task.RankTask;
import moe.a2a.kernels.DType;
import moe.a2a.v1.ClusterState;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.GroupFailed;
import moe.a2a.v1.Join;
import moe.a2a.v1.ModelSpec;
import moe.a2a.v1.WorkerMessage;

/**
 * Ranks as worker processes, coordinated over their ClusterService sessions. Membership: a worker
 * joins and gets a free rank; once all {@code N} ranks are taken the group is formed (PrepareGroup:
 * every worker listens — over NCCL, the group's first rank makes its unique id —; FormGroup: every
 * worker connects to its peers, or joins the NCCL group with that id; GroupReady from all: the
 * cluster serves). The group's transport is fixed, or picked each time it forms ({@link
 * TransportPolicy#AUTO}: shm when every member offers it from one shared-memory domain, else tcp).
 * A lost worker (session ended, heartbeat silent) or a failed step breaks the group: the step in
 * flight fails naming the rank, every other worker abandons its communicator, and the group forms
 * again, with a new epoch, as soon as every rank is taken. Over TCP or shm, when every expert a
 * lost rank hosted has a replica elsewhere, the others form a group at once and serve degraded: the
 * lost rank's slots get share 0 and it takes no tokens; when a worker takes the rank again, the
 * group forms whole and the placements from before the loss come back.
 *
 * <p>This class routes the sessions' messages to the pieces that own each job: the {@link
 * GroupConductor} forms and breaks the group epoch by epoch, {@link DegradedServing} decides
 * whether it serves without lost ranks, {@link WorkerSteps}, {@link WorkerTasks} and {@link
 * PlacementRollout} keep the steps, rank tasks and stagings in flight.
 *
 * <p>Session callbacks arrive on gRPC threads and {@link #submit} on the scheduler thread. One lock
 * guards all state: the {@link Membership}, the {@link GroupFormation}, the {@link ServingState}
 * and every piece above (none of them thread-safe on their own). Listeners are told on the timer
 * thread, outside the lock.
 */
public final class RemoteCluster implements RankGroup {
    /** The data planes worker processes can run: every transport on the class path but threads. */
    public static final List<Transport> TRANSPORTS =
            Transports.transports(Transports.betweenProcesses());

    private final ModelConfig model;
    private final TransportPolicy policy;
    private final LayerPlacements placements;
    private final int worldSize;
    private final long heartbeatTimeoutNs;
    private final ScheduledExecutorService timer;

    /** Guards every field below, and every call into them. */
    private final Object lock = new Object();

    private final Membership membership;
    private final GroupFormation formation;
    private final ServingState state;
    private final PlacementRollout rollout;
    private final GroupConductor conductor;
    private final WorkerSteps steps;
    private final WorkerTasks tasks;
    private final RankConditions conditions;

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
                listener,
                new StragglerWatch(StragglerWatch.Settings.DEFAULT, placement.worldSize(), null));
    }

    /**
     * @param placement where the experts live, as this coordinator decided; its world size is the
     *     group's, and every worker is sent it
     * @param policy the data plane the workers must run, or auto: shm for a group of one host, tcp
     *     across hosts, picked each time the group forms
     * @param stragglers judges the waits the workers report, flagging the rank the others wait on
     */
    public RemoteCluster(
            ModelConfig model,
            ModelSpec spec,
            String fingerprint,
            Placement placement,
            TransportPolicy policy,
            long exchangeTimeoutNs,
            long heartbeatTimeoutNs,
            ClusterListener listener,
            StragglerWatch stragglers) {
        RankGroup.checkPlacement(placement, model);
        final int worldSize = placement.worldSize();
        this.policy = policy;
        this.model = model;
        this.placements = new LayerPlacements(model.layers(), placement);
        this.worldSize = worldSize;
        this.heartbeatTimeoutNs = heartbeatTimeoutNs;
        this.membership = new Membership(spec, fingerprint, placements, policy, heartbeatTimeoutNs);
        this.formation = new GroupFormation(membership, worldSize, exchangeTimeoutNs);
        this.state = new ServingState(worldSize);
        this.timer =
                Executors.newSingleThreadScheduledExecutor(
                        r -> {
                            Thread t = new Thread(r, "moe-a2a-cluster-timer");
                            t.setDaemon(true);
                            return t;
                        });
        this.rollout = new PlacementRollout(lock, state, membership, placements, worldSize);
        this.conductor =
                new GroupConductor(
                        lock,
                        state,
                        membership,
                        formation,
                        new DegradedServing(placements, rollout, worldSize),
                        worldSize,
                        timer,
                        listener,
                        stragglers.settings(),
                        this::failInFlight);
        this.steps =
                new WorkerSteps(
                        lock,
                        state,
                        membership,
                        formation,
                        model,
                        worldSize,
                        exchangeTimeoutNs,
                        timer,
                        stragglers,
                        conductor::onStraggler,
                        conductor::onFailure);
        this.tasks = new WorkerTasks(lock, state, membership, worldSize, conductor::onFailure);
        this.conditions =
                new RankConditions(membership, state, formation, conductor, stragglers, worldSize);
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
        return rollout.stage(layer, next);
    }

    /**
     * {@inheritDoc} ActivatePlacement goes to every worker on its session, which also carries the
     * steps in order, so every worker switches before the same step.
     */
    @Override
    public void activate(int layer, Placement next) {
        synchronized (lock) {
            rollout.activateLocked(layer, next);
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
            return state.serving() ? formation.readyCount() : 0;
        }
    }

    /** Times the group was broken and had to form again. */
    @Override
    public int rebuilds() {
        synchronized (lock) {
            return conductor.rebuilds();
        }
    }

    @Override
    public int[] servingRanks() {
        synchronized (lock) {
            return state.groupRanks();
        }
    }

    @Override
    public int degradedRanks() {
        synchronized (lock) {
            return state.degradedRanks();
        }
    }

    @Override
    public int partitionedRanks() {
        synchronized (lock) {
            return conductor.partitioned();
        }
    }

    @Override
    public ClusterState describe() {
        synchronized (lock) {
            return conditions.describe();
        }
    }

    /** Admits a worker or refuses it with the status to end its call with. */
    WorkerSession join(Join join, StreamObserver<ControlMessage> out) throws StatusException {
        synchronized (lock) {
            WorkerSession session = membership.admit(join, out);
            conductor.onJoined(session);
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
                    conductor.onBound(session.rank, message.getBound());
                    break;
                case READY:
                    conductor.onReady(session.rank, message.getReady().getEpoch());
                    break;
                case RESULT:
                    steps.onResult(session.rank, message.getResult());
                    break;
                case RANK_TASK_RESULT:
                    tasks.onResult(session.rank, message.getRankTaskResult());
                    break;
                case STAGED:
                    rollout.onStaged(session.rank, message.getStaged());
                    break;
                case FAILURE:
                    if (message.getFailure().hasPeer() && steps.pending(message.getFailure())) {
                        conductor
                                .cutLinks()
                                .onPeerNamed(session.rank, message.getFailure().getPeer());
                    }
                    steps.onFailure(session.rank, message.getFailure());
                    break;
                case GROUP_FAILED:
                    onGroupFailed(session, message.getGroupFailed());
                    break;
                case LINKS_PROBED:
                    conductor.cutLinks().onLinksProbed(session.rank, message.getLinksProbed());
                    break;
                default:
                    break; // heartbeats only refresh the session
            }
        }
    }

    /** A worker could not connect the epoch's group. Lock held. */
    private void onGroupFailed(WorkerSession session, GroupFailed failed) {
        if (failed.getUnavailable().isEmpty()) {
            conductor.cutLinks().onGroupFailed(session.rank, failed);
        } else if (!conductor.onPlaneUnavailable(session.rank, failed)) {
            // the fixed transport this worker cannot run: it rejoins, backing off, until it can
            String cause = "cannot run " + failed.getUnavailable() + ": " + failed.getMessage();
            session.end(Status.UNAVAILABLE.withDescription(cause));
            onSessionEnd(session, cause);
        }
    }

    void onSessionEnd(WorkerSession session, String cause) {
        synchronized (lock) {
            if (membership.release(session)) {
                conductor.onLost(
                        session.rank,
                        "rank " + session.rank + " lost (" + session + ": " + cause + ")");
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
            int[] capacities,
            int lowLatencyTokens) {
        return steps.submit(layer, dtype, tokens, counts, routing, capacities, lowLatencyTokens);
    }

    @Override
    public void recordRouting() {
        steps.recordRouting();
    }

    @Override
    public CompletableFuture<List<byte[]>> onEveryRank(RankTask task) {
        return tasks.onEveryRank(task);
    }

    @Override
    public void close() {
        timer.shutdownNow();
        synchronized (lock) {
            state.halt();
            membership.endAll(Status.UNAVAILABLE.withDescription("control plane shutting down"));
        }
    }

    /** Fails the steps, then the rank tasks, then the stagings in flight. Lock held. */
    private void failInFlight(A2aException failure) {
        steps.failAll(failure);
        tasks.failAll(failure);
        rollout.failAll(failure);
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
