package moe.a2a.control.cluster;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * The request queue's bounds: how many requests, and how many of their tokens, wait for a step. A
 * request takes a slot as it arrives and gives it back once, as a step takes it or as it is
 * withdrawn. Thread-safe: gRPC threads take slots, the scheduler thread gives them back.
 */
final class QueueSlots {
    private final int maxQueuedRequests;
    private final long maxQueuedTokens;
    private final AtomicInteger queued = new AtomicInteger();
    private final AtomicLong queuedTokens = new AtomicLong();

    QueueSlots(int maxQueuedRequests, long maxQueuedTokens) {
        this.maxQueuedRequests = maxQueuedRequests;
        this.maxQueuedTokens = maxQueuedTokens;
    }

    /**
     * Counts {@code job} in, in the slot {@link #reserve} took for it when {@code slotReserved}.
     *
     * @throws RejectedExecutionException when the queue holds its most requests or tokens
     */
    void admit(ForwardJob job, boolean slotReserved) {
        if (!slotReserved && queued.incrementAndGet() > maxQueuedRequests) {
            queued.decrementAndGet();
            throw new RejectedExecutionException(
                    "request queue full: queued=" + maxQueuedRequests + " (retry later)");
        }
        if (queuedTokens.addAndGet(job.numTokens()) > maxQueuedTokens) {
            queuedTokens.addAndGet(-job.numTokens());
            queued.decrementAndGet();
            throw new RejectedExecutionException(
                    "request queue full: tokens="
                            + maxQueuedTokens
                            + " queued, this request's "
                            + job.numTokens()
                            + " do not fit (retry later)");
        }
    }

    /** Takes a slot for a request whose tokens have not arrived yet, or says why there is none. */
    @Nullable RuntimeException reserve() {
        for (int q = queued.get(); ; q = queued.get()) {
            if (q >= maxQueuedRequests) {
                return new RejectedExecutionException(
                        "request queue full: queued=" + maxQueuedRequests + " (retry later)");
            }
            if (queued.compareAndSet(q, q + 1)) {
                return null;
            }
        }
    }

    /** Gives back a slot {@link #reserve} took. */
    void release() {
        queued.decrementAndGet();
    }

    /** Gives {@code job}'s slot and tokens back, once: true for the caller that did. */
    boolean leave(ForwardJob job) {
        if (!job.queued().compareAndSet(true, false)) {
            return false;
        }
        queued.decrementAndGet();
        queuedTokens.addAndGet(-job.numTokens());
        return true;
    }

    int requests() {
        return queued.get();
    }

    long tokens() {
        return queuedTokens.get();
    }
}
