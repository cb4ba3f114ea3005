package moe.a2a.control.cluster;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import moe.a2a.bench.BenchScope;
import moe.a2a.bench.BenchWorkload;
import moe.a2a.bench.RankTimes;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.control.grpc.TensorCodec;
import moe.a2a.control.metrics.StepMetrics;
import moe.a2a.dispatch.DType;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankRuntime;
import moe.a2a.experts.RankStepResult;
import moe.a2a.experts.RoutingInput;
import moe.a2a.experts.SafetensorsWeights;
import moe.a2a.experts.SeededWeights;
import moe.a2a.experts.WeightSource;
import moe.a2a.v1.Accepted;
import moe.a2a.v1.BenchRankResult;
import moe.a2a.v1.BenchTask;
import moe.a2a.v1.Bound;
import moe.a2a.v1.ClusterServiceGrpc;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.FormGroup;
import moe.a2a.v1.GroupReady;
import moe.a2a.v1.Heartbeat;
import moe.a2a.v1.Join;
import moe.a2a.v1.ModelSpec;
import moe.a2a.v1.PrepareGroup;
import moe.a2a.v1.StepFailure;
import moe.a2a.v1.StepResult;
import moe.a2a.v1.StepTask;
import moe.a2a.v1.WorkerMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A worker process's agent: joins the control plane, loads its rank's experts, forms the rank group
 * when told (over the data plane the control plane picked from those this worker offers), runs its
 * share of every step, and rejoins with backoff when the control plane goes away (asking for its
 * old rank). Control messages are handled in order on one data-plane thread, which owns the
 * communicator and the rank's buffers; heartbeats go out on a timer. Each step is recorded in the
 * worker's own meters (its tokens and its stage times).
 */
public final class WorkerAgent implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WorkerAgent.class);
    private static final long[] NO_QUEUE = new long[0];

    /**
     * How this worker joins.
     *
     * @param preferredRank rank to ask for first, or -1
     * @param expectedModel model fingerprint to insist on, or empty
     * @param rejoinTimeout how long to keep trying to reach the control plane before giving up
     * @param gpuProbe the GPU probe's one line, sent along so a refusal can quote it
     */
    public record Settings(
            String workerId,
            int preferredRank,
            String expectedModel,
            Duration rejoinTimeout,
            Duration heartbeatInterval,
            String gpuProbe) {}

    private final ClusterServiceGrpc.ClusterServiceStub stub;
    private final Settings settings;
    private final Map<String, DataPlane> dataPlanes;
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
    // Owned by the data-plane thread:
    private RankRuntime worker;
    private String loadedTransport = "";
    private StepListener metrics;
    private ModelConfig model;
    private ModelSpec loadedSpec;
    private int loadedRank = -1;
    private int worldSize;
    private DataPlane plane;
    private Communicator comm;
    private long commEpoch = -1;
    private long boundEpoch = -1;
    private ByteBuffer tokens = ByteBuffer.allocateDirect(0);

    /**
     * @param dataPlanes the transports this worker can run, by name; the control plane picks one
     */
    public WorkerAgent(
            ManagedChannel channel,
            Settings settings,
            List<DataPlane> dataPlanes,
            MeterRegistry registry) {
        this.stub = ClusterServiceGrpc.newStub(channel);
        this.settings = settings;
        this.dataPlanes = new LinkedHashMap<>();
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
            dataPlane.execute(() -> dropGroup("control plane session ended: " + outcome.status));
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
                                + outcome.status);
            }
            LOG.info("session ended ({}); rejoining in {} ms", outcome.status, backoffMs);
            Thread.sleep(backoffMs);
            backoffMs = Math.min(2_000, backoffMs * 2);
        }
    }

    private record SessionOutcome(boolean accepted, Status status) {}

    private SessionOutcome session() throws InterruptedException {
        CountDownLatch ended = new CountDownLatch(1);
        AtomicReference<Status> end = new AtomicReference<>(Status.OK);
        boolean[] accepted = new boolean[1];
        Sender sender = new Sender();
        StreamObserver<WorkerMessage> requests =
                stub.session(
                        new StreamObserver<>() {
                            @Override
                            public void onNext(ControlMessage message) {
                                if (message.hasAccepted()) {
                                    accepted[0] = true;
                                }
                                dataPlane.execute(() -> handle(message, sender));
                            }

                            @Override
                            public void onError(Throwable t) {
                                end.set(Status.fromThrowable(t));
                                ended.countDown();
                            }

                            @Override
                            public void onCompleted() {
                                end.set(
                                        Status.UNAVAILABLE.withDescription(
                                                "control plane ended the session"));
                                ended.countDown();
                            }
                        });
        sender.attach(requests);
        sender.send(
                WorkerMessage.newBuilder()
                        .setJoin(
                                Join.newBuilder()
                                        .setWorkerId(settings.workerId())
                                        .setPreferredRank(
                                                rank >= 0 ? rank : settings.preferredRank())
                                        .setExpectedModel(settings.expectedModel())
                                        .addAllTransports(dataPlanes.keySet())
                                        .setGpuProbe(settings.gpuProbe()))
                        .build());
        long periodMs = settings.heartbeatInterval().toMillis();
        ScheduledFuture<?> heartbeats =
                timer.scheduleAtFixedRate(
                        () ->
                                sender.send(
                                        WorkerMessage.newBuilder()
                                                .setHeartbeat(
                                                        Heartbeat.newBuilder()
                                                                .setSentUnixMs(
                                                                        System.currentTimeMillis()))
                                                .build()),
                        periodMs,
                        periodMs,
                        TimeUnit.MILLISECONDS);
        while (!ended.await(100, TimeUnit.MILLISECONDS)) {
            if (closed) {
                sender.cancel();
            }
        }
        heartbeats.cancel(false);
        return new SessionOutcome(accepted[0], end.get());
    }

    private void handle(ControlMessage message, Sender sender) {
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
        String transport = accepted.getTransport().isEmpty() ? "tcp" : accepted.getTransport();
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
        if (worker != null
                && loadedRank == accepted.getRank()
                && spec.equals(loadedSpec)
                && transport.equals(loadedTransport)) {
            LOG.info("rejoined as rank {} of {}", rank, worldSize);
            return;
        }
        long start = System.nanoTime();
        WeightSource weights =
                spec.getWeightsPath().isEmpty()
                        ? new SeededWeights(
                                spec.getSeed(),
                                spec.getExperts(),
                                spec.getHidden(),
                                spec.getFfn(),
                                spec.getLayers())
                        : SafetensorsWeights.open(Path.of(spec.getWeightsPath()));
        model =
                new ModelConfig(
                        spec.getExperts(),
                        spec.getHidden(),
                        spec.getFfn(),
                        spec.getTopK(),
                        spec.getLayers());
        closeRuntime();
        worker =
                plane.runtime(
                        model, weights, Placement.contiguous(model.experts(), worldSize), rank);
        loadedTransport = transport;
        metrics = new StepMetrics(registry, model.layers(), model.experts(), worldSize, transport);
        loadedSpec = spec;
        loadedRank = rank;
        LOG.info(
                "joined as rank {} of {}: loaded {} experts of {} in {} ms",
                rank,
                worldSize,
                Placement.contiguous(model.experts(), worldSize).localExperts(rank),
                weights.description(),
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
    }

    private void prepare(PrepareGroup prepare, Sender sender) {
        dropGroup("new group epoch " + prepare.getEpoch());
        Bound bound = plane.bind(rank, worldSize, prepare);
        boundEpoch = prepare.getEpoch();
        sender.send(WorkerMessage.newBuilder().setBound(bound).build());
    }

    private void form(FormGroup form, Sender sender) {
        if (boundEpoch < 0 || form.getEpoch() != boundEpoch) {
            return;
        }
        long epoch = form.getEpoch();
        boundEpoch = -1;
        comm = plane.form(form);
        commEpoch = epoch;
        worker.rebind(comm);
        LOG.info("group epoch {} connected: rank {} of {}", epoch, rank, worldSize);
        sender.send(
                WorkerMessage.newBuilder()
                        .setReady(GroupReady.newBuilder().setEpoch(epoch))
                        .build());
    }

    private void step(StepTask task, Sender sender) {
        if (comm == null || task.getEpoch() != commEpoch) {
            sender.send(
                    failure(
                            task.getStepId(),
                            "rank " + rank + " is not in group epoch " + task.getEpoch()));
            return;
        }
        try {
            DType dtype = TensorCodec.dtype(task.getDtype(), "step.dtype");
            int n = task.getNumTokens();
            if (tokens.capacity() < task.getTokens().size()) {
                tokens =
                        ByteBuffer.allocateDirect(task.getTokens().size())
                                .order(ByteOrder.LITTLE_ENDIAN);
            }
            task.getTokens().copyTo(tokens.clear());
            RankStepResult r =
                    worker.step(task.getLayer(), dtype, tokens.clear(), n, routing(task, n));
            int bytes = n * model.hidden() * dtype.sizeBytes();
            StepResult.Builder out =
                    StepResult.newBuilder()
                            .setStepId(task.getStepId())
                            .setOutput(
                                    ByteString.copyFrom(
                                            r.output().duplicate().clear().limit(bytes)))
                            .setRecvTokens(r.recvTokens())
                            .setRouteNs(r.routeNs())
                            .setDispatchNs(r.dispatchNs())
                            .setExpertNs(r.expertNs())
                            .setCombineNs(r.combineNs());
            for (long v : r.tokensPerRank()) {
                out.addTokensPerRank(v);
            }
            for (long v : r.tokensPerExpert()) {
                out.addTokensPerExpert(v);
            }
            for (int p = 0; p < r.bytesSent().length; p++) {
                out.addBytesSent(r.bytesSent()[p]).addBytesReceived(r.bytesReceived()[p]);
            }
            sender.send(WorkerMessage.newBuilder().setResult(out).build());
            // This rank's view of the step: its own tokens' counts and its own stage times.
            long[][] sent = new long[worldSize][];
            long[][] received = new long[worldSize][];
            sent[loadedRank] = r.bytesSent();
            received[loadedRank] = r.bytesReceived();
            metrics.onStep(
                    new StepStatsSnapshot(
                            task.getStepId(),
                            task.getLayer(),
                            1,
                            n,
                            r.tokensPerRank(),
                            r.tokensPerExpert(),
                            sent,
                            received,
                            r.routeNs(),
                            r.dispatchNs(),
                            r.expertNs(),
                            r.combineNs()),
                    NO_QUEUE);
        } catch (RuntimeException e) {
            comm.abort(e);
            sender.send(failure(task.getStepId(), e.getMessage()));
            metrics.onStepFailed(e, task.getNumTokens());
        }
    }

    private void bench(BenchTask task, Sender sender) {
        BenchRankResult.Builder out = BenchRankResult.newBuilder().setBenchId(task.getBenchId());
        if (comm == null) {
            sender.send(
                    WorkerMessage.newBuilder()
                            .setBenchResult(out.setError("rank " + rank + " has no group"))
                            .build());
            return;
        }
        try {
            RankTimes times =
                    BenchRun.rank(
                            BenchWorkload.named(task.getWorkload()),
                            BenchScope.valueOf(task.getScope()),
                            comm,
                            task.getWarmup(),
                            task.getIters());
            out.setOk(times.ok());
            for (long v : times.dispatchNs()) {
                out.addDispatchNs(v);
            }
            for (long v : times.combineNs()) {
                out.addCombineNs(v);
            }
            for (long v : times.barrierNs()) {
                out.addBarrierNs(v);
            }
        } catch (RuntimeException e) {
            comm.abort(e);
            out.setError(String.valueOf(e.getMessage()));
        }
        sender.send(WorkerMessage.newBuilder().setBenchResult(out).build());
    }

    private RoutingInput routing(StepTask task, int n) {
        if (task.hasTopk()) {
            int k = task.getTopk().getK();
            int[] ids = new int[n * k];
            float[] weights = new float[n * k];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = task.getTopk().getExpertIds(i);
                weights[i] = task.getTopk().getWeights(i);
            }
            return new RoutingInput.TopK(ids, weights);
        }
        if (task.hasRouterLogits()) {
            return new RoutingInput.Logits(TensorCodec.floats(task.getRouterLogits()));
        }
        return new RoutingInput.ModelGate();
    }

    private static WorkerMessage failure(long stepId, String message) {
        return WorkerMessage.newBuilder()
                .setFailure(
                        StepFailure.newBuilder()
                                .setStepId(stepId)
                                .setMessage(String.valueOf(message)))
                .build();
    }

    private void dropGroup(String reason) {
        if (boundEpoch >= 0) {
            plane.drop();
            boundEpoch = -1;
        }
        if (comm != null) {
            comm.abort(new A2aException(reason));
            comm.close();
            comm = null;
            commEpoch = -1;
        }
    }

    /** Frees what the rank's runtime holds outside the heap (device memory on a GPU). */
    private void closeRuntime() {
        if (worker instanceof AutoCloseable closeable) {
            try {
                closeable.close();
            } catch (Exception e) {
                LOG.warn("closing the rank runtime: {}", e.toString());
            }
        }
        worker = null;
    }

    @Override
    public void close() {
        closed = true;
        dataPlane.execute(
                () -> {
                    dropGroup("worker shutting down");
                    closeRuntime();
                });
        dataPlane.shutdown();
        timer.shutdownNow();
    }

    /**
     * Serializes messages onto the session's request stream, from the data-plane and timer threads.
     */
    private static final class Sender {
        private StreamObserver<WorkerMessage> requests;
        private boolean done;

        synchronized void attach(StreamObserver<WorkerMessage> requests) {
            this.requests = requests;
        }

        synchronized void send(WorkerMessage message) {
            if (!done) {
                try {
                    requests.onNext(message);
                } catch (RuntimeException e) {
                    done = true;
                }
            }
        }

        synchronized void fail(Throwable cause) {
            if (!done) {
                done = true;
                requests.onError(
                        Status.INTERNAL.withDescription(cause.toString()).asRuntimeException());
            }
        }

        synchronized void cancel() {
            if (!done) {
                done = true;
                requests.onError(
                        Status.CANCELLED
                                .withDescription("worker shutting down")
                                .asRuntimeException());
            }
        }
    }
}
