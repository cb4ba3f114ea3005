package moe.a2a.comm.local;

import java.util.Arrays;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ExchangeTimeoutException;
import moe.a2a.comm.PeerFailedException;

/**
 * A reusable barrier for the threads of one {@link LocalGroup} that names the missing rank when it
 * times out, and that a failure breaks for every waiter. Shared by all ranks of the group.
 */
final class LocalBarrier {
    private final int size;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition advanced = lock.newCondition();
    private final long[] arrivedGeneration;
    private long generation;
    private int arrived;
    private Throwable failure;

    LocalBarrier(int size) {
        this.size = size;
        this.arrivedGeneration = new long[size];
        Arrays.fill(arrivedGeneration, -1);
    }

    /**
     * Waits until every rank of the group has arrived at this generation.
     *
     * @throws ExchangeTimeoutException naming the first missing rank; the group is then broken
     * @throws PeerFailedException if the group was broken before or while waiting
     */
    void await(int rank, long step, ExchangePhase phase, long timeoutNs) {
        lock.lock();
        try {
            throwIfFailed(rank);
            final long gen = generation;
            arrivedGeneration[rank] = gen;
            if (++arrived == size) {
                arrived = 0;
                generation++;
                advanced.signalAll();
                return;
            }
            long remainingNs = timeoutNs;
            while (generation == gen) {
                throwIfFailed(rank);
                if (remainingNs <= 0) {
                    ExchangeTimeoutException timeout =
                            new ExchangeTimeoutException(
                                    step, phase, rank, firstMissing(gen), timeoutNs);
                    breakLocked(timeout);
                    throw timeout;
                }
                remainingNs = advanced.awaitNanos(remainingNs);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            A2aException interrupted = new A2aException("exchange interrupted: rank=" + rank, e);
            breakLocked(interrupted);
            throw interrupted;
        } finally {
            lock.unlock();
        }
    }

    /** Breaks the barrier for every current and future waiter. The first cause wins. */
    void fail(Throwable cause) {
        lock.lock();
        try {
            breakLocked(cause);
        } finally {
            lock.unlock();
        }
    }

    /** The cause that broke the group, or null. */
    Throwable failure() {
        lock.lock();
        try {
            return failure;
        } finally {
            lock.unlock();
        }
    }

    boolean isBroken() {
        lock.lock();
        try {
            return failure != null;
        } finally {
            lock.unlock();
        }
    }

    private void breakLocked(Throwable cause) {
        if (failure == null) {
            failure = cause;
        }
        advanced.signalAll();
    }

    private void throwIfFailed(int rank) {
        if (failure != null) {
            throw new PeerFailedException(rank, failure);
        }
    }

    private int firstMissing(long gen) {
        for (int r = 0; r < size; r++) {
            if (arrivedGeneration[r] < gen) {
                return r;
            }
        }
        return -1;
    }
}
