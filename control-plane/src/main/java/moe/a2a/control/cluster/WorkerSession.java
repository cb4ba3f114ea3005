package moe.a2a.control.cluster;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.Set;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import moe.a2a.v1.ControlMessage;

/**
 * The control plane's end of one worker's session: its rank, what it offered when it joined (its
 * transports, host and shared-memory domain), its stream, and when it was last heard from. Sends
 * are serialized (a gRPC stream takes one message at a time). Thread-safe.
 */
final class WorkerSession {
    final String workerId;
    final int rank;

    /** The transports the worker offered. */
    final Set<Transport> offered;

    /** The worker's host name, for messages; may be empty. */
    final String host;

    /** The worker's shared-memory domain ({@code Join.shm_domain}); empty without shm. */
    final String shmDomain;

    private final StreamObserver<ControlMessage> out;
    private volatile long lastHeardNanos = System.nanoTime();

    /** The worker said it cannot run shm now (its folder is full): not for this session again. */
    private volatile boolean shmUnavailable;

    private boolean closed;

    WorkerSession(
            String workerId,
            int rank,
            Set<Transport> offered,
            String host,
            String shmDomain,
            StreamObserver<ControlMessage> out) {
        this.workerId = workerId;
        this.rank = rank;
        this.offered = Set.copyOf(offered);
        this.host = host;
        this.shmDomain = shmDomain;
        this.out = out;
    }

    /** Whether the worker can exchange through shared memory with others of its domain. */
    boolean offersShm() {
        return offers(offered, TransportReach.HOST) && !shmDomain.isEmpty() && !shmUnavailable;
    }

    /** The worker cannot run shm any more; it is planned without it for the rest of its session. */
    void withdrawShm() {
        shmUnavailable = true;
    }

    /** Whether {@code offered} holds a transport of {@code reach}. */
    static boolean offers(Set<Transport> offered, TransportReach reach) {
        return offered.stream().anyMatch(t -> Transports.reach(t) == reach);
    }

    /** Its host name, or "an unnamed host". */
    String hostName() {
        return host.isEmpty() ? "an unnamed host" : host;
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
