package moe.a2a.control.cluster;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.Set;
import java.util.concurrent.TimeUnit;
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

    /**
     * How long a worker that said it cannot run shm (its folder full, say) is first planned without
     * it; each time it says so again doubles it, up to {@link #SHM_RETRY_MAX_NANOS}.
     */
    static final long SHM_RETRY_FIRST_NANOS = TimeUnit.SECONDS.toNanos(10);

    static final long SHM_RETRY_MAX_NANOS = TimeUnit.MINUTES.toNanos(10);

    /** Times the worker said it cannot run shm, this session. */
    private int shmWithdrawals;

    /** From when shm is planned for it again ({@link System#nanoTime()}), once withdrawn. */
    private volatile long shmRetryAtNanos;

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

    /**
     * Whether the worker can exchange through shared memory with others of its domain at {@code
     * nowNanos}: it offered shm, and has not said it cannot run it within its retry delay.
     */
    boolean offersShm(long nowNanos) {
        return offers(offered, TransportReach.HOST)
                && !shmDomain.isEmpty()
                && (shmWithdrawals == 0 || nowNanos - shmRetryAtNanos >= 0);
    }

    /**
     * The worker cannot run shm at {@code nowNanos}: it is planned without it for the retry delay,
     * after which the next formation tries shm again (a folder with room again gets shm back
     * without the worker rejoining). Guarded by the cluster's lock.
     *
     * @return the retry delay, nanoseconds
     */
    long withdrawShm(long nowNanos) {
        long delay = SHM_RETRY_FIRST_NANOS << Math.min(shmWithdrawals, 10);
        delay = Math.min(delay, SHM_RETRY_MAX_NANOS);
        shmWithdrawals++;
        shmRetryAtNanos = nowNanos + delay;
        return delay;
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
