package moe.a2a.control.cluster;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import moe.a2a.v1.ControlMessage;

/**
 * The control plane's end of one worker's session: its rank, its stream, and when it was last heard
 * from. Sends are serialized (a gRPC stream takes one message at a time). Thread-safe.
 */
final class WorkerSession {
    final String workerId;
    final int rank;
    private final StreamObserver<ControlMessage> out;
    private volatile long lastHeardNanos = System.nanoTime();
    private boolean closed;

    WorkerSession(String workerId, int rank, StreamObserver<ControlMessage> out) {
        this.workerId = workerId;
        this.rank = rank;
        this.out = out;
    }

    void heard() {
        lastHeardNanos = System.nanoTime();
    }

    long silentNanos() {
        return System.nanoTime() - lastHeardNanos;
    }

    synchronized void send(ControlMessage message) {
        if (!closed) {
            try {
                out.onNext(message);
            } catch (RuntimeException e) {
                closed =
                        true; // the call is gone; the session's end is reported through the request
                // stream
            }
        }
    }

    /** Ends the call from this side (for example on heartbeat timeout). */
    synchronized void end(Status status) {
        if (!closed) {
            closed = true;
            try {
                out.onError(status.asRuntimeException());
            } catch (RuntimeException ignored) {
                // already cancelled by the worker side
            }
        }
    }

    @Override
    public String toString() {
        return "worker " + workerId + " (rank " + rank + ")";
    }
}
