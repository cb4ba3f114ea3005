package moe.a2a.comm.nccl;

import static org.bytedeco.cuda.global.nccl.ncclRemoteError;
import static org.bytedeco.cuda.global.nccl.ncclSuccess;

import java.util.function.IntSupplier;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ExchangeTimeoutException;

/**
 * Launches one rank's NCCL calls and waits for each through the {@link NcclWatchdog}, to the
 * group's timeout; holds the group's failure. A call that fails to launch, times out or meets an
 * NCCL error aborts the backend, and every later call fails naming the first cause.
 *
 * <p>Owned by the rank's thread ({@link #abort} may come from any thread).
 */
final class NcclLauncher {
    private final NcclBackend backend;
    private final NcclWatchdog watchdog;
    private final long timeoutNs;
    private final int rank;
    private volatile A2aException failure;

    /** The CUDA graphs holding the communicator, which NCCL's abort and destroy wait for. */
    private final GraphHolds graphs = new GraphHolds();

    /**
     * An abort another thread asked for, or one asked for while graphs hold the communicator: the
     * owner's wait carries it out at its next poll, dropping its graphs first.
     */
    private volatile boolean abortDeferred;

    /**
     * The thread that launches this rank's calls (the rank's own): the one that made the
     * communicator, then the one that launched last.
     */
    private volatile Thread owner = Thread.currentThread();

    /** The backend as the watchdog sees it: its abort drops the graphs first. */
    private final NcclWatchdog.Progress progress =
            new NcclWatchdog.Progress() {
                @Override
                public int asyncError() {
                    return abortDeferred ? ncclRemoteError : backend.asyncError();
                }

                @Override
                public boolean isIdle() {
                    return backend.isIdle();
                }

                @Override
                public void abort() {
                    abortNccl();
                }

                @Override
                public String lastError() {
                    return abortDeferred ? "aborted by another thread" : backend.lastError();
                }
            };

    NcclLauncher(NcclBackend backend, NcclWatchdog watchdog, long timeoutNs) {
        this.backend = backend;
        this.watchdog = watchdog;
        this.timeoutNs = timeoutNs;
        this.rank = backend.rank();
    }

    /** Launches the exchange group laid out by the offsets and byte counts, and waits for it. */
    void run(
            long step,
            ExchangePhase phase,
            long[] sendOff,
            long[] sendBytes,
            long[] recvOff,
            long[] recvBytes,
            String what) {
        try {
            int launched = backend.exchange(sendOff, sendBytes, recvOff, recvBytes);
            if (NcclResults.isError(launched)) {
                String detail = backend.lastError();
                abortNccl();
                throw NcclResults.failure(launched, what + " (ncclGroupEnd)", rank, detail);
            }
            watchdog.await(progress, timeoutNs, step, phase, rank, what);
        } catch (A2aException e) {
            throw fail(e);
        }
    }

    /**
     * Launches one NCCL call from the host staging ({@code launch} returns its result) and waits
     * for it; {@code peer} is the only peer it waits on, or {@link
     * ExchangeTimeoutException#UNKNOWN_PEER}.
     */
    void launch(IntSupplier launch, String call, int peer) {
        try {
            int launched = launch.getAsInt();
            if (NcclResults.isError(launched)) {
                String detail = backend.lastError();
                abortNccl();
                throw NcclResults.failure(launched, call, rank, detail);
            }
            watchdog.await(progress, timeoutNs, -1, ExchangePhase.COLLECTIVE, rank, call, peer);
        } catch (A2aException e) {
            throw fail(e);
        }
    }

    /** Aborts the group after {@code e}; returns what to throw. */
    A2aException fail(A2aException e) {
        abortNccl();
        A2aException earlier = failure;
        if (earlier != null) {
            // aborted from another thread while this one waited: that is the cause to report
            return broken(earlier);
        }
        failure = e;
        return e;
    }

    /** Waits, to the group's timeout, for what was launched last on this rank's stream. */
    void await(long step, ExchangePhase phase, String what) {
        watchdog.await(progress, timeoutNs, step, phase, rank, what);
    }

    /**
     * Waits, to the group's timeout, until what was launched last is on the stream, without waiting
     * for it to run (see {@link NcclWatchdog#awaitLaunched}).
     */
    void awaitLaunched(long step, ExchangePhase phase, String what) {
        watchdog.awaitLaunched(progress, timeoutNs, step, phase, rank, what);
    }

    /**
     * Records {@code cause} as the group's failure, unless there is one, and aborts NCCL if work is
     * in flight. An idle communicator is left intact (every later call fails here), so that its
     * data plane may still shrink it into the next epoch's group; {@link #failed} tells who frees
     * it to abort it then. From a thread other than the one launching, NCCL and CUDA are left to
     * that thread (its device is the current one there): its wait in progress or its next, its next
     * launch, its own abort or its close aborts NCCL if work is still in flight.
     */
    void abort(Throwable cause) {
        if (failure == null) {
            failure =
                    cause instanceof A2aException a
                            ? a
                            : new A2aException("aborted: " + cause, cause);
        }
        if (owner != Thread.currentThread()) {
            abortDeferred = true;
        } else {
            abortIfBusy();
        }
    }

    /**
     * On the launching thread, once the group failed: NCCL aborted if work is in flight (which
     * would otherwise wait on a peer that is gone), so that a close after need not wait for it.
     */
    void abortIfBusy() {
        if (failure != null && !quiescent()) {
            abortNccl();
        }
    }

    /** The CUDA graphs holding the communicator. */
    GraphHolds graphs() {
        return graphs;
    }

    /**
     * Aborts NCCL, the graphs holding the communicator dropped first; where they cannot be dropped
     * now (another thread owns them, or a capture is open), the owner's next wait aborts it.
     */
    private void abortNccl() {
        if (graphs.clear()) {
            backend.abort();
        } else {
            abortDeferred = true;
        }
    }

    /** Whether the group has failed or was aborted. */
    boolean failed() {
        return failure != null;
    }

    /**
     * Nothing enqueued is left to run and NCCL reports no error; not known while the stream is
     * being captured.
     */
    private boolean quiescent() {
        try {
            return graphs.unlessCapturing(
                    () -> backend.asyncError() == ncclSuccess && backend.isIdle());
        } catch (A2aException e) {
            // a CUDA error polling the stream: not known to be idle
            return false;
        }
    }

    /** Throws when the group has failed; called before each launch, on the launching thread. */
    void checkOpen() {
        owner = Thread.currentThread();
        A2aException f = failure;
        if (f != null) {
            // another thread's abort may have come between this thread's waits
            abortIfBusy();
            throw broken(f);
        }
    }

    private A2aException broken(A2aException cause) {
        return new A2aException(
                "nccl group of rank " + rank + " is broken: " + cause.getMessage(), cause);
    }
}
