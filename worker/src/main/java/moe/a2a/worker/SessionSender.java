package moe.a2a.worker;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import moe.a2a.v1.Heartbeat;
import moe.a2a.v1.WorkerMessage;

/**
 * A worker's end of one control-plane session, outbound: serializes messages onto the session's
 * request stream, from the data-plane and heartbeat threads (a gRPC stream takes one message at a
 * time), and sends nothing more once the stream is gone. Thread-safe.
 */
final class SessionSender {
    private StreamObserver<WorkerMessage> requests;
    private boolean done;

    /** The call's request stream: the call starts after this sender, which its replies use. */
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

    /** Sends a heartbeat every {@code interval}, so the control plane knows this worker lives. */
    ScheduledFuture<?> heartbeats(ScheduledExecutorService timer, Duration interval) {
        long periodMs = interval.toMillis();
        return timer.scheduleAtFixedRate(
                () ->
                        send(
                                WorkerMessage.newBuilder()
                                        .setHeartbeat(
                                                Heartbeat.newBuilder()
                                                        .setSentUnixMs(System.currentTimeMillis()))
                                        .build()),
                periodMs,
                periodMs,
                TimeUnit.MILLISECONDS);
    }

    /** Ends the session because this worker could not handle a control message. */
    synchronized void fail(Throwable cause) {
        if (!done) {
            done = true;
            requests.onError(
                    Status.INTERNAL.withDescription(cause.toString()).asRuntimeException());
        }
    }

    /** Ends the session because this worker is shutting down. */
    synchronized void cancel() {
        if (!done) {
            done = true;
            requests.onError(
                    Status.CANCELLED.withDescription("worker shutting down").asRuntimeException());
        }
    }
}
