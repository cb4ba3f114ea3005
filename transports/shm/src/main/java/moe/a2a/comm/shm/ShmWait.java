package moe.a2a.comm.shm;

import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ExchangeTimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * One rank's wait for its peers, reused from wait to wait: which peers it still waits on, the
 * back-off (spin, then yield, then park for a growing pause), and the checks every pause makes
 * (abort notice; every 2 ms the pending peers' liveness; the deadline).
 *
 * <p>Owned by the rank's thread.
 */
final class ShmWait {
    private static final long LIVENESS_CHECK_NS = TimeUnit.MILLISECONDS.toNanos(2);
    private static final int SPINS = 1 << 10;
    private static final int YIELDS = 1 << 7;
    private static final long MAX_PARK_NS = 256_000;

    /** What a pause checks: the abort notice, and a peer's liveness; both throw to fail. */
    interface Checks {
        void throwIfAborted();

        void checkAlive(int peer, long now);
    }

    private final int rank;
    private final int spins;
    private final long timeoutNs;
    private final Checks checks;

    /** pending[p]: still waiting on peer p. */
    final boolean[] pending;

    private long step;
    private ExchangePhase phase = ExchangePhase.COLLECTIVE;
    private long deadline;
    private long nextCheckNs;
    private int rounds;

    /**
     * A failure seen by the last pause, thrown by the next one: a peer that delivers its last
     * segment and then closes or exits can be seen gone before its segment is, so the caller makes
     * one more pass first.
     */
    private @Nullable RuntimeException seen;

    ShmWait(int rank, int size, long timeoutNs, Checks checks) {
        this.rank = rank;
        // spinning pays only while every rank has a core of its own; else it takes the peers' time
        this.spins = size <= Runtime.getRuntime().availableProcessors() ? SPINS : 0;
        this.timeoutNs = timeoutNs;
        this.checks = checks;
        this.pending = new boolean[size];
    }

    /** Starts waiting on every peer; returns how many. */
    int all(long step, ExchangePhase phase) {
        Arrays.fill(pending, true);
        pending[rank] = false;
        start(step, phase);
        return pending.length - 1;
    }

    /** Starts waiting on {@code peer} alone, for a point-to-point message. */
    void one(int peer) {
        Arrays.fill(pending, false);
        pending[peer] = true;
        start(-1, ExchangePhase.COLLECTIVE);
    }

    private void start(long s, ExchangePhase p) {
        step = s;
        phase = p;
        long now = System.nanoTime();
        deadline = now + timeoutNs;
        nextCheckNs = now + LIVENESS_CHECK_NS;
        rounds = 0;
        seen = null;
    }

    /** After a pass over the pending peers: backs off unless one of them arrived. */
    void pass(boolean progressed) {
        if (progressed) {
            rounds = 0;
        } else {
            idle();
        }
    }

    /**
     * Nothing arrived: backs off, and throws when the group is aborted, a pending peer is dead or
     * stalled, or the deadline has passed (an {@link ExchangeTimeoutException} naming the first
     * pending peer), once a pass made after the failure was seen found the peers still pending.
     */
    void idle() {
        if (seen != null) {
            throw seen;
        }
        try {
            check();
        } catch (RuntimeException e) {
            seen = e;
        }
    }

    private void check() {
        checks.throwIfAborted();
        int round = rounds++;
        if (round < spins) {
            Thread.onSpinWait();
            if ((round & 63) != 63) {
                return;
            }
        } else if (round < spins + YIELDS) {
            Thread.yield();
        } else {
            LockSupport.parkNanos(
                    Math.min(MAX_PARK_NS, 1000L << Math.min(8, round - spins - YIELDS)));
        }
        long now = System.nanoTime();
        if (now - nextCheckNs >= 0) {
            nextCheckNs = now + LIVENESS_CHECK_NS;
            for (int p = 0; p < pending.length; p++) {
                if (pending[p]) {
                    checks.checkAlive(p, now);
                }
            }
        }
        if (now - deadline >= 0) {
            throw new ExchangeTimeoutException(step, phase, rank, firstPending(), timeoutNs);
        }
    }

    private int firstPending() {
        for (int p = 0; p < pending.length; p++) {
            if (pending[p]) {
                return p;
            }
        }
        return ExchangeTimeoutException.UNKNOWN_PEER;
    }
}
