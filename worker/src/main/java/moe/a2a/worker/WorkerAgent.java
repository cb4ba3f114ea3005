package moe.a2a.worker;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.DataPlane;
import moe.a2a.gpu.GpuRankOptions;
import moe.a2a.v1.ClusterServiceGrpc;
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
 *
 * <p>The pieces, by thread: {@link ControlSession} runs each session on the thread that calls
 * {@link #run}, and owns the heartbeat thread; {@link ControlMessageHandler} passes each message,
 * on the data-plane thread, to {@link RankAssignment} (the rank and what was loaded for it), {@link
 * GroupEpochs} (the group, its steps and rank tasks) or {@link PlacementStaging} (which owns the
 * loader thread).
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
     * @param gpu how a GPU rank computes (TF32 or not) and holds its experts (bf16 or FP8)
     */
    public record Settings(
            String workerId,
            int preferredRank,
            String expectedModel,
            Duration rejoinTimeout,
            Duration heartbeatInterval,
            String gpuProbe,
            String host,
            GpuRankOptions gpu) {
        /** Settings without a host name, a GPU rank's defaults ({@link GpuRankOptions#DEFAULT}). */
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
                    "",
                    GpuRankOptions.DEFAULT);
        }
    }

    private final Settings settings;
    private final ExecutorService dataPlane =
            Executors.newSingleThreadExecutor(r -> new Thread(r, "moe-a2a-worker"));
    private volatile boolean closed;

    // Used on the data-plane thread (see each class for the exceptions):
    private final RankAssignment assignment;
    private final GroupEpochs epochs;
    private final PlacementStaging staging;

    private final ControlSession session;

    /**
     * @param dataPlanes the transports this worker can run; the control plane picks one
     */
    public WorkerAgent(
            ManagedChannel channel,
            Settings settings,
            List<DataPlane> dataPlanes,
            MeterRegistry registry) {
        this.settings = settings;
        OfferedDataPlanes planes = new OfferedDataPlanes(dataPlanes);
        this.assignment = new RankAssignment(planes, settings.gpu(), registry);
        this.epochs = new GroupEpochs(planes, assignment);
        this.staging = new PlacementStaging(assignment);
        ControlMessageHandler handler = new ControlMessageHandler(assignment, epochs, staging);
        this.session =
                new ControlSession(
                        ClusterServiceGrpc.newStub(channel),
                        settings,
                        planes,
                        assignment,
                        (message, sender) -> {
                            if (message.hasAbort()) {
                                // the wait in progress ends now; the drop waits its turn
                                epochs.abortNow(
                                        message.getAbort().getEpoch(),
                                        ControlMessageHandler.abandoned(message.getAbort()));
                            }
                            dataPlane.execute(() -> handler.handle(message, sender));
                        },
                        () -> closed);
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
            long formedBefore = epochs.formedGroups();
            ControlSession.Outcome outcome = session.run();
            if (outcome.accepted()) {
                lastSessionNanos = System.nanoTime();
            }
            // A session that got as far as a group starts the backoff over; one that was accepted
            // but whose group could not form (a full shm dir, say) backs off like a refused one.
            if (epochs.formedGroups() > formedBefore) {
                backoffMs = 100;
            }
            String ended = "control plane session ended: " + outcome.statusLine();
            epochs.abortNow(-1, ended);
            try {
                dataPlane.execute(() -> epochs.drop(ended));
            } catch (RejectedExecutionException e) {
                return; // closed meanwhile: close() left the group
            }
            if (closed) {
                return;
            }
            if (outcome.status().getCode() == Status.Code.FAILED_PRECONDITION) {
                throw new A2aException(
                        "control plane refused this worker: " + outcome.status().getDescription());
            }
            if (System.nanoTime() - lastSessionNanos > settings.rejoinTimeout().toNanos()) {
                throw new A2aException(
                        "control plane unreachable for "
                                + settings.rejoinTimeout()
                                + ": "
                                + outcome.statusLine());
            }
            LOG.info("session ended ({}); rejoining in {} ms", outcome.statusLine(), backoffMs);
            Thread.sleep(backoffMs);
            backoffMs = Math.min(2_000, backoffMs * 2);
        }
    }

    /**
     * Leaves the group and frees the rank; waits a few seconds for the data-plane thread to do so,
     * so that a group's shared-memory files are gone before the process exits.
     */
    @Override
    public void close() {
        closed = true;
        epochs.abortNow(-1, "worker shutting down");
        try {
            dataPlane.execute(
                    () -> {
                        epochs.drop("worker shutting down");
                        assignment.closeRuntime();
                    });
        } catch (RejectedExecutionException e) {
            // closed before
        }
        dataPlane.shutdown();
        staging.close();
        session.close();
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
