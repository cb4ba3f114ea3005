package moe.a2a.comm.nccl;

import static org.bytedeco.cuda.global.nccl.ncclInProgress;

import java.util.concurrent.locks.LockSupport;
import java.util.function.LongConsumer;
import java.util.function.LongSupplier;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ExchangeTimeoutException;

/**
 * Waits for a rank's enqueued NCCL work without ever hanging: it polls the communicator's
 * asynchronous error and the stream until the work is done, and aborts the communicator ({@code
 * ncclCommAbort}) when an error shows up or the deadline passes, so a dead peer becomes an
 * exception on this rank. NCCL cannot tell which peer is missing, so a timeout names none, unless
 * the work had only one peer.
 *
 * <p>The clock and the pause between polls are injected so the logic is tested without a GPU.
 */
final class NcclWatchdog {
    /** What the watchdog watches: one rank's communicator and stream. */
    interface Progress {
        /** {@code ncclCommGetAsyncError}: success, in progress, or an error code. */
        int asyncError();

        /** Whether everything enqueued so far has finished. */
        boolean isIdle();

        /** {@code ncclCommAbort}: pending and later operations fail fast. */
        void abort();

        /** NCCL's last error text for this communicator, or empty. */
        String lastError();
    }

    private static final long SPIN_NS = 20_000;
    private static final long PARK_NS = 20_000;

    private final LongSupplier clock;
    private final LongConsumer pause;

    NcclWatchdog(LongSupplier clock, LongConsumer pause) {
        this.clock = clock;
        this.pause = pause;
    }

    /** Real time: spins briefly (most small exchanges finish within microseconds), then parks. */
    static NcclWatchdog system() {
        return new NcclWatchdog(
                System::nanoTime,
                waitedNs -> {
                    if (waitedNs < SPIN_NS) {
                        Thread.onSpinWait();
                    } else {
                        LockSupport.parkNanos(PARK_NS);
                    }
                });
    }

    /**
     * Returns once {@code progress} is idle; aborts it and throws when an asynchronous error shows
     * up or {@code timeoutNs} passes. {@code step}, {@code phase}, {@code rank} and {@code call}
     * name the failure.
     */
    void await(
            Progress progress,
            long timeoutNs,
            long step,
            ExchangePhase phase,
            int rank,
            String call) {
        await(progress, timeoutNs, step, phase, rank, call, ExchangeTimeoutException.UNKNOWN_PEER);
    }

    /**
     * As {@link #await(Progress, long, long, ExchangePhase, int, String)}, for work whose only peer
     * is {@code peer} (a point-to-point message): a timeout names it.
     */
    void await(
            Progress progress,
            long timeoutNs,
            long step,
            ExchangePhase phase,
            int rank,
            String call,
            int peer) {
        poll(progress, timeoutNs, step, phase, rank, call, peer, true);
    }

    /**
     * Returns once a non-blocking communicator has finished launching what was enqueued last (its
     * asynchronous error leaves {@code ncclInProgress}), without asking the stream whether the work
     * ran: safe while the stream is being captured into a CUDA graph. Errors and the timeout as for
     * {@link #await(Progress, long, long, ExchangePhase, int, String)}.
     */
    void awaitLaunched(
            Progress progress,
            long timeoutNs,
            long step,
            ExchangePhase phase,
            int rank,
            String call) {
        poll(
                progress,
                timeoutNs,
                step,
                phase,
                rank,
                call,
                ExchangeTimeoutException.UNKNOWN_PEER,
                false);
    }

    /** Polls until {@code progress} is idle ({@code untilIdle}) or done launching. */
    private void poll(
            Progress progress,
            long timeoutNs,
            long step,
            ExchangePhase phase,
            int rank,
            String call,
            int peer,
            boolean untilIdle) {
        final long start = clock.getAsLong();
        while (true) {
            int error = progress.asyncError();
            if (NcclResults.isError(error)) {
                String detail = progress.lastError();
                progress.abort();
                throw NcclResults.failure(error, call, rank, detail);
            }
            if (untilIdle ? progress.isIdle() : error != ncclInProgress) {
                return;
            }
            long waited = clock.getAsLong() - start;
            if (waited > timeoutNs) {
                progress.abort();
                throw new ExchangeTimeoutException(step, phase, rank, peer, timeoutNs);
            }
            if (Thread.interrupted()) {
                progress.abort();
                Thread.currentThread().interrupt();
                throw new A2aException(
                        "interrupted while waiting for " + call + " on rank " + rank);
            }
            pause.accept(waited);
        }
    }
}
