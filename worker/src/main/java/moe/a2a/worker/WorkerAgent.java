package moe.a2a.worker;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import moe.a2a.bench.BenchTaskCodec;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.SparseCommunicator;
import moe.a2a.comm.Transport;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.LayerSlots;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankRuntime;
import moe.a2a.experts.WeightSource;
import moe.a2a.metrics.StepMetrics;
import moe.a2a.protocol.PlacementCodec;
import moe.a2a.protocol.TaskCodec;
import moe.a2a.v1.Accepted;
import moe.a2a.v1.ActivatePlacement;
import moe.a2a.v1.BenchTask;
import moe.a2a.v1.Bound;
import moe.a2a.v1.ClusterServiceGrpc;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.FormGroup;
import moe.a2a.v1.GroupReady;
import moe.a2a.v1.Join;
import moe.a2a.v1.ModelSpec;
import moe.a2a.v1.PlacementSpec;
import moe.a2a.v1.PlacementStaged;
import moe.a2a.v1.PrepareGroup;
import moe.a2a.v1.StagePlacement;
import moe.a2a.v1.StepTask;
import moe.a2a.v1.WorkerMessage;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A worker process's agent: joins the control plane, loads its rank's experts, forms the rank group
 * when told (over the data plane the control plane picked from those this worker offers), runs its
 * share of every step, and rejoins with backoff when the control plane goes away (asking for its
 * old rank). Control messages are handled in order on one data-plane thread, which owns the
 * communicator and the rank's buffers; a coming placement's weights load on a loader thread;
 * heartbeats go out on a timer. Each step is recorded in the worker's own meters (its tokens and
 * its stage times).
 */
public final class WorkerAgent implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WorkerAgent.class);

    /** How long {@link #close} waits for the data-plane thread to leave the group. */
    private static final long CLOSE_WAIT_SECONDS = 5;

    /**
     * How this worker joins.
     *
     * @param preferredRank rank to ask for first, or -1
     * @param expectedModel model fingerprint to insist on, or empty
     * @param rejoinTimeout how long to keep trying to reach the control plane before giving up
     * @param gpuProbe the GPU probe's one line, sent along so a refusal can quote it
     * @param host this host's name, sent along for the control plane's messages
     */
    public record Settings(
            String workerId,
            int preferredRank,
            String expectedModel,
            Duration rejoinTimeout,
            Duration heartbeatInterval,
            String gpuProbe,
            String host) {
        /** Settings without a host name. */
        public Settings(
                String workerId,
                int preferredRank,
                String expectedModel,
                Duration rejoinTimeout,
                Duration heartbeatInterval,
                String gpuProbe) {
            this(
                    workerId,
                    preferredRank,
                    expectedModel,
                    rejoinTimeout,
                    heartbeatInterval,
                    gpuProbe,
                    "");
        }
    }

    private final ClusterServiceGrpc.ClusterServiceStub stub;
    private final Settings settings;
    private final Map<Transport, DataPlane> dataPlanes;
    private final MeterRegistry registry;
    private final ExecutorService dataPlane =
            Executors.newSingleThreadExecutor(r -> new Thread(r, "moe-a2a-worker"));
    private final ScheduledExecutorService timer =
            Executors.newSingleThreadScheduledExecutor(
                    r -> {
                        Thread t = new Thread(r, "moe-a2a-heartbeat");
                        t.setDaemon(true);
                        return t;
                    });
    private volatile boolean closed;
    private volatile int rank = -1;

    /** Loads staged placements' weights, apart from the data-plane thread. */
    private final ExecutorService loader =
            Executors.newSingleThreadExecutor(
                    r -> {
                        Thread t = new Thread(r, "moe-a2a-placement-loader");
                        t.setDaemon(true);
                        return t;
                    });

    /** Per layer, the slots staged for its next placement. */
    private final Map<Integer, LayerSlots> staged = new ConcurrentHashMap<>();

    // Owned by the data-plane thread:
    private final RankTasks tasks = new RankTasks();
    private LoadedRank loaded;
    private int worldSize;
    private DataPlane plane;
    private @Nullable FormedGroup group;
    private long commEpoch = -1;
    private long boundEpoch = -1;

    /** The ranks of the group being formed, when it is not every rank (a lost rank's peers). */
    private int[] groupRanks = new int[0];

    /** How the group being formed binds when it spans hosts, else null. */
    private @Nullable HostGroupsPlane acrossHosts;

    /**
     * @param dataPlanes the transports this worker can run; the control plane picks one
     */
    public WorkerAgent(
            ManagedChannel channel,
            Settings settings,
            List<DataPlane> dataPlanes,
            MeterRegistry registry) {
        this.stub = ClusterServiceGrpc.newStub(channel);
        this.settings = settings;
        this.dataPlanes = new EnumMap<>(Transport.class);
        for (DataPlane plane : dataPlanes) {
            this.dataPlanes.put(plane.transport(), plane);
        }
        this.registry = registry;
    }

    /**
     * Serves until {@link #close()}; returns normally then.
     *
     * @throws A2aException if the control plane stayed unreachable for the rejoin timeout, or
     *     refused this worker
     */
    public void run() throws InterruptedException {
        long lastSessionNanos = System.nanoTime();
        long backoffMs = 100;
        while (!closed) {
            SessionOutcome outcome = session();
            if (outcome.accepted) {
                lastSessionNanos = System.nanoTime();
                backoffMs = 100;
            }
            try {
                dataPlane.execute(
                        () -> dropGroup("control plane session ended: " + oneLine(outcome.status)));
            } catch (RejectedExecutionException e) {
                return; // closed meanwhile: close() left the group
            }
            if (closed) {
                return;
            }
            if (outcome.status.getCode() == Status.Code.FAILED_PRECONDITION) {
                throw new A2aException(
                        "control plane refused this worker: " + outcome.status.getDescription());
            }
            if (System.nanoTime() - lastSessionNanos > settings.rejoinTimeout().toNanos()) {
                throw new A2aException(
                        "control plane unreachable for "
                                + settings.rejoinTimeout()
                                + ": "
                                + oneLine(outcome.status));
            }
            LOG.info("session ended ({}); rejoining in {} ms", oneLine(outcome.status), backoffMs);
            Thread.sleep(backoffMs);
            backoffMs = Math.min(2_000, backoffMs * 2);
        }
    }

    private record SessionOutcome(boolean accepted, Status status) {}

    /**
     * A status in one line: its code, description and its cause's message (a status's own text
     * carries the cause's stack trace, too much for a line that repeats on every retry).
     */
    static String oneLine(Status status) {
        StringBuilder out = new StringBuilder(status.getCode().name());
        if (status.getDescription() != null) {
            out.append(": ").append(status.getDescription());
        }
        if (status.getCause() != null) {
            out.append(" (").append(status.getCause().getMessage()).append(')');
        }
        return out.toString();
    }

    private SessionOutcome session() throws InterruptedException {
        SessionSender sender = new SessionSender();
        SessionAdapter responses =
                new SessionAdapter(message -> dataPlane.execute(() -> handle(message, sender)));
        sender.attach(stub.session(responses));
        Join.Builder join =
                Join.newBuilder()
                        .setWorkerId(settings.workerId())
                        .setPreferredRank(rank >= 0 ? rank : settings.preferredRank())
                        .setExpectedModel(settings.expectedModel())
                        .addAllTransports(
                                dataPlanes.keySet().stream().map(Transport::label).toList())
                        .setGpuProbe(settings.gpuProbe())
                        .setHost(settings.host());
        for (DataPlane offered : dataPlanes.values()) {
            offered.describe(join);
        }
        sender.send(WorkerMessage.newBuilder().setJoin(join).build());
        ScheduledFuture<?> heartbeats = sender.heartbeats(timer, settings.heartbeatInterval());
        while (!responses.awaitEnd(100, TimeUnit.MILLISECONDS)) {
            if (closed) {
                sender.cancel();
            }
        }
        heartbeats.cancel(false);
        return new SessionOutcome(responses.accepted(), responses.end());
    }

    private void handle(ControlMessage message, SessionSender sender) {
        try {
            switch (message.getKindCase()) {
                case ACCEPTED:
                    accept(message.getAccepted());
                    break;
                case PREPARE:
                    prepare(message.getPrepare(), sender);
                    break;
                case FORM:
                    form(message.getForm(), sender);
                    break;
                case STEP:
                    step(message.getStep(), sender);
                    break;
                case BENCH:
                    bench(message.getBench(), sender);
                    break;
                case STAGE_PLACEMENT:
                    stage(message.getStagePlacement(), sender);
                    break;
                case ACTIVATE_PLACEMENT:
                    activate(message.getActivatePlacement());
                    break;
                case ABORT:
                    dropGroup(
                            "control plane abandoned epoch "
                                    + message.getAbort().getEpoch()
                                    + ": "
                                    + message.getAbort().getReason());
                    break;
                default:
                    break;
            }
        } catch (RuntimeException e) {
            LOG.error("cannot handle {}: {}", message.getKindCase(), e.toString());
            dropGroup(e.toString());
            sender.fail(e);
        }
    }

    private void accept(Accepted accepted) {
        Transport transport =
                accepted.getTransport().isEmpty()
                        ? Transport.TCP
                        : Transport.parse("accepted.transport", accepted.getTransport());
        DataPlane chosen = dataPlanes.get(transport);
        if (chosen == null) {
            throw new A2aException(
                    "accepted.transport: "
                            + transport
                            + " (expected: one of "
                            + dataPlanes.keySet()
                            + ", what this worker offered)");
        }
        if (plane != chosen) {
            LOG.info(
                    "data plane: {} (the control plane's choice of {})",
                    transport,
                    dataPlanes.keySet());
            plane = chosen;
        }
        ModelSpec spec = accepted.getModel();
        rank = accepted.getRank();
        worldSize = accepted.getWorldSize();
        staged.clear();
        if (loaded != null && loaded.serves(rank, spec, accepted.getPlacementsList(), transport)) {
            LOG.info("rejoined as rank {} of {}", rank, worldSize);
            return;
        }
        long start = System.nanoTime();
        WeightSource weights = LoadedRank.weights(spec);
        ModelConfig model = LoadedRank.model(spec);
        closeRuntime();
        if (accepted.getPlacementsCount() != model.layers()) {
            throw new IllegalArgumentException(
                    "accepted.placements: "
                            + accepted.getPlacementsCount()
                            + " (expected: "
                            + model.layers()
                            + ", one per layer)");
        }
        List<Placement> placements = new ArrayList<>();
        for (PlacementSpec p : accepted.getPlacementsList()) {
            placements.add(PlacementCodec.decode(p, model.experts(), worldSize));
        }
        RankRuntime runtime = plane.runtime(model, weights, placements.get(0), rank);
        // A layer the coordinator has rebalanced since the start differs from layer 0's placement.
        for (int layer = 1; layer < placements.size(); layer++) {
            if (!placements.get(layer).sameSlots(placements.get(0))
                    || placements.get(layer).version() != placements.get(0).version()) {
                runtime.install(runtime.stage(layer, placements.get(layer)));
            }
        }
        loaded =
                new LoadedRank(
                        rank,
                        spec,
                        transport,
                        model,
                        runtime,
                        new StepMetrics(
                                registry,
                                weights.layerNumbers(),
                                model.experts(),
                                worldSize,
                                transport));
        LOG.info(
                "joined as rank {} of {}: loaded experts {} of {} (placement version {}) in {} ms",
                rank,
                worldSize,
                Arrays.toString(placements.get(0).expertsOf(rank)),
                weights.description(),
                placements.get(0).version(),
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
    }

    /**
     * Loads a coming placement's weights on the loader thread, so that steps go on meanwhile, and
     * answers when done.
     */
    private void stage(StagePlacement stage, SessionSender sender) {
        final LoadedRank rank = loaded;
        loader.execute(
                () -> {
                    PlacementStaged.Builder answer =
                            PlacementStaged.newBuilder().setStageId(stage.getStageId());
                    try {
                        Placement next =
                                PlacementCodec.decode(
                                        stage.getPlacement(), rank.model().experts(), worldSize);
                        LayerSlots slots = rank.runtime().stage(stage.getLayer(), next);
                        staged.put(stage.getLayer(), slots);
                        answer.setLoadedBytes(slots.loadedBytes());
                    } catch (RuntimeException e) {
                        LOG.warn("cannot stage layer {}: {}", stage.getLayer(), e.toString());
                        answer.setError(String.valueOf(e.getMessage()));
                    }
                    sender.send(WorkerMessage.newBuilder().setStaged(answer).build());
                });
    }

    /** Switches a layer to its new placement, loading it now if it was not staged. */
    private void activate(ActivatePlacement activate) {
        int layer = activate.getLayer();
        Placement next =
                PlacementCodec.decode(activate.getPlacement(), loaded.model().experts(), worldSize);
        LayerSlots slots = staged.remove(layer);
        if (slots == null || slots.placement().version() != next.version()) {
            slots = loaded.runtime().stage(layer, next);
        }
        loaded.runtime().install(slots);
        LOG.info(
                "layer {}: placement version {} in use, experts {}",
                layer,
                next.version(),
                Arrays.toString(next.expertsOf(rank)));
    }

    private void prepare(PrepareGroup prepare, SessionSender sender) {
        dropGroup("new group epoch " + prepare.getEpoch());
        if (!prepare.getTransport().isEmpty()) {
            usePlane(Transport.parse("prepare.transport", prepare.getTransport()));
        }
        groupRanks = prepare.getMembersList().stream().mapToInt(r -> r).toArray();
        acrossHosts = null;
        Bound bound;
        if (prepare.getMemberHostsCount() > 0) {
            if (groupRanks.length > 0) {
                throw new IllegalArgumentException(
                        "prepare.members: "
                                + Arrays.toString(groupRanks)
                                + " (expected: none, every rank, with prepare.member_hosts)");
            }
            acrossHosts =
                    new HostGroupsPlane(
                            offered(Transport.TCP, "the rails across hosts"),
                            offered(Transport.SHM, "the group inside this host"),
                            prepare,
                            rank,
                            worldSize);
            bound = acrossHosts.bind(prepare);
        } else if (groupRanks.length == 0) {
            bound = plane.bind(rank, worldSize, prepare);
        } else {
            int member = Arrays.binarySearch(groupRanks, rank);
            if (member < 0) {
                throw new IllegalArgumentException(
                        "prepare.members: "
                                + Arrays.toString(groupRanks)
                                + " (expected: to hold this worker's rank "
                                + rank
                                + ")");
            }
            bound = plane.bind(member, groupRanks.length, prepare);
        }
        boundEpoch = prepare.getEpoch();
        sender.send(WorkerMessage.newBuilder().setBound(bound).build());
    }

    /** The data plane of {@code transport} that this worker offered, needed for {@code what}. */
    private DataPlane offered(Transport transport, String what) {
        DataPlane offered = dataPlanes.get(transport);
        if (offered == null) {
            throw new A2aException(
                    "prepare.member_hosts: a group across hosts runs "
                            + what
                            + " over "
                            + transport
                            + " (this worker offered "
                            + dataPlanes.keySet()
                            + ")");
        }
        return offered;
    }

    /**
     * Runs this epoch's group over {@code transport} (a control plane on --transport auto picks it
     * per epoch). The rank's runtime stays: tcp and shm share the CPU one, so only a switch between
     * them is possible without loading again.
     */
    private void usePlane(Transport transport) {
        if (plane != null && plane.transport() == transport) {
            return;
        }
        DataPlane chosen = dataPlanes.get(transport);
        if (chosen == null) {
            throw new A2aException(
                    "prepare.transport: "
                            + transport
                            + " (expected: one of "
                            + dataPlanes.keySet()
                            + ", what this worker offered)");
        }
        if (plane != null && (transport == Transport.NCCL || plane.transport() == Transport.NCCL)) {
            throw new A2aException(
                    "prepare.transport: "
                            + transport
                            + " (expected: "
                            + plane.transport()
                            + ", the data plane this rank was loaded for)");
        }
        LOG.info(
                "data plane: {} for this group epoch (was {})",
                transport,
                plane == null ? "none" : plane.transport());
        plane = chosen;
    }

    private void form(FormGroup form, SessionSender sender) {
        if (boundEpoch < 0 || form.getEpoch() != boundEpoch) {
            return;
        }
        long epoch = form.getEpoch();
        boundEpoch = -1;
        if (acrossHosts != null) {
            group = acrossHosts.form(form);
            acrossHosts = null;
        } else {
            Communicator comm = plane.form(form);
            if (groupRanks.length > 0) {
                comm = new SparseCommunicator(comm, groupRanks, worldSize);
            }
            group = FormedGroup.flat(comm);
        }
        commEpoch = epoch;
        group.bindTo(loaded.runtime());
        LOG.info(
                "group epoch {} connected: rank {} of {}{}{}",
                epoch,
                rank,
                worldSize,
                groupRanks.length > 0 ? ", with ranks " + Arrays.toString(groupRanks) : "",
                group.describe());
        sender.send(
                WorkerMessage.newBuilder()
                        .setReady(GroupReady.newBuilder().setEpoch(epoch))
                        .build());
    }

    private void step(StepTask task, SessionSender sender) {
        if (group == null || task.getEpoch() != commEpoch) {
            sender.send(
                    TaskCodec.stepFailure(
                            task.getStepId(),
                            "rank " + rank + " is not in group epoch " + task.getEpoch()));
            return;
        }
        tasks.step(task, loaded, group, worldSize, sender);
    }

    private void bench(BenchTask task, SessionSender sender) {
        if (group == null) {
            sender.send(
                    WorkerMessage.newBuilder()
                            .setBenchResult(
                                    BenchTaskCodec.benchFailure(
                                            task.getBenchId(), "rank " + rank + " has no group"))
                            .build());
            return;
        }
        tasks.bench(task, group, sender);
    }

    private void dropGroup(String reason) {
        if (boundEpoch >= 0) {
            if (acrossHosts != null) {
                acrossHosts.drop();
                acrossHosts = null;
            } else {
                plane.drop();
            }
            boundEpoch = -1;
        }
        if (group != null) {
            group.abort(new A2aException(reason));
            group.close();
            group = null;
            commEpoch = -1;
        }
    }

    /**
     * Frees what the rank's runtime holds outside the heap (device memory on a GPU), and forgets
     * what was loaded.
     */
    private void closeRuntime() {
        if (loaded != null && loaded.runtime() instanceof AutoCloseable closeable) {
            try {
                closeable.close();
            } catch (Exception e) {
                LOG.warn("closing the rank runtime: {}", e.toString());
            }
        }
        loaded = null;
    }

    /**
     * Leaves the group and frees the rank; waits a few seconds for the data-plane thread to do so,
     * so that a group's shared-memory files are gone before the process exits.
     */
    @Override
    public void close() {
        closed = true;
        try {
            dataPlane.execute(
                    () -> {
                        dropGroup("worker shutting down");
                        closeRuntime();
                    });
        } catch (RejectedExecutionException e) {
            // closed before
        }
        dataPlane.shutdown();
        loader.shutdownNow();
        timer.shutdownNow();
        try {
            if (!dataPlane.awaitTermination(CLOSE_WAIT_SECONDS, TimeUnit.SECONDS)) {
                LOG.warn(
                        "the data-plane thread did not stop within {} s; leaving it",
                        CLOSE_WAIT_SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
