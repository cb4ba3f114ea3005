package moe.a2a.worker;

import io.grpc.Status;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.BooleanSupplier;
import moe.a2a.comm.Transport;
import moe.a2a.v1.ClusterServiceGrpc;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.Join;
import moe.a2a.v1.WorkerMessage;

/**
 * Runs one session with the control plane at a time: opens it, joins (asking for the rank held
 * before, if any), passes each control message on, sends heartbeats on the heartbeat thread it
 * owns, and waits for the session to end, cancelling it when the worker closes. Called by the
 * thread that runs the worker; keeps no state between sessions.
 */
final class ControlSession implements AutoCloseable {
    /** How one session ended, and whether the control plane accepted this worker during it. */
    record Outcome(boolean accepted, Status status) {
        /**
         * The status in one line: its code, description and its cause's message (a status's own
         * text carries the cause's stack trace, too much for a line that repeats on every retry).
         */
        String statusLine() {
            StringBuilder out = new StringBuilder(status.getCode().name());
            if (status.getDescription() != null) {
                out.append(": ").append(status.getDescription());
            }
            if (status.getCause() != null) {
                out.append(" (").append(status.getCause().getMessage()).append(')');
            }
            return out.toString();
        }
    }

    private final ClusterServiceGrpc.ClusterServiceStub stub;
    private final WorkerAgent.Settings settings;
    private final OfferedDataPlanes planes;
    private final RankAssignment assignment;
    private final BiConsumer<ControlMessage, SessionSender> onMessage;
    private final BooleanSupplier closed;

    /** Sends the heartbeats of each session. */
    private final ScheduledExecutorService timer =
            Executors.newSingleThreadScheduledExecutor(
                    r -> {
                        Thread t = new Thread(r, "moe-a2a-heartbeat");
                        t.setDaemon(true);
                        return t;
                    });

    /**
     * @param onMessage takes each control message, with the sender to answer it on, on a gRPC
     *     thread, so it must only pass it on
     * @param closed whether the worker is closing, polled while a session lasts
     */
    ControlSession(
            ClusterServiceGrpc.ClusterServiceStub stub,
            WorkerAgent.Settings settings,
            OfferedDataPlanes planes,
            RankAssignment assignment,
            BiConsumer<ControlMessage, SessionSender> onMessage,
            BooleanSupplier closed) {
        this.stub = stub;
        this.settings = settings;
        this.planes = planes;
        this.assignment = assignment;
        this.onMessage = onMessage;
        this.closed = closed;
    }

    /** Runs one session to its end. */
    Outcome run() throws InterruptedException {
        SessionSender sender = new SessionSender();
        SessionAdapter responses = new SessionAdapter(message -> onMessage.accept(message, sender));
        sender.attach(stub.session(responses));
        int rank = assignment.rank();
        Join.Builder join =
                Join.newBuilder()
                        .setWorkerId(settings.workerId())
                        .setPreferredRank(rank >= 0 ? rank : settings.preferredRank())
                        .setExpectedModel(settings.expectedModel())
                        .addAllTransports(
                                planes.transports().stream().map(Transport::label).toList())
                        .setGpuProbe(settings.gpuProbe())
                        .setHost(settings.host());
        planes.describe(join);
        sender.send(WorkerMessage.newBuilder().setJoin(join).build());
        ScheduledFuture<?> heartbeats = sender.heartbeats(timer, settings.heartbeatInterval());
        while (!responses.awaitEnd(100, TimeUnit.MILLISECONDS)) {
            if (closed.getAsBoolean()) {
                sender.cancel();
            }
        }
        heartbeats.cancel(false);
        return new Outcome(responses.accepted(), responses.end());
    }

    /** Stops the heartbeats at once. */
    @Override
    public void close() {
        timer.shutdownNow();
    }
}
