package moe.a2a.control.cluster;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import moe.a2a.comm.A2aException;
import moe.a2a.metrics.StepListener;

/**
 * The requests waiting for a step, in arrival order, and the choice of the next step's batch: the
 * oldest request plus every later one that batches with it (same layer, dtype and routing kind) up
 * to the token budget; the others keep their place. Owned by the scheduler thread; only {@link
 * #withdraw} may be called from any thread.
 */
final class StepBatcher {
    private final ArrayDeque<ForwardJob> pending = new ArrayDeque<>();
    private final int maxBatchTokens;
    private final QueueSlots slots;
    private final StepListener listener;

    StepBatcher(int maxBatchTokens, QueueSlots slots, StepListener listener) {
        this.maxBatchTokens = maxBatchTokens;
        this.slots = slots;
        this.listener = listener;
    }

    void add(ForwardJob job) {
        pending.add(job);
    }

    boolean isEmpty() {
        return pending.isEmpty();
    }

    /**
     * The oldest request still wanted and those that batch with it, their queue slots given back;
     * requests whose caller gave up are answered with why and dropped on the way, and withdrawn
     * ones just dropped. Empty when none is left.
     */
    List<ForwardJob> nextBatch() {
        List<ForwardJob> batch = new ArrayList<>();
        ForwardJob first = null;
        while (first == null && !pending.isEmpty()) {
            ForwardJob job = pending.poll();
            first = abandon(job) || !slots.leave(job) ? null : job;
        }
        if (first == null) {
            return batch;
        }
        batch.add(first);
        long tokens = first.numTokens();
        for (Iterator<ForwardJob> it = pending.iterator(); it.hasNext(); ) {
            ForwardJob job = it.next();
            if (abandon(job) || !job.queued().get()) {
                it.remove();
            } else if (job.batchesWith(first)
                    && tokens + job.numTokens() <= maxBatchTokens
                    && slots.leave(job)) {
                batch.add(job);
                tokens += job.numTokens();
                it.remove();
            }
        }
        return batch;
    }

    /** Answers {@code job} with its abandonment, if its caller gave up; true then. */
    private boolean abandon(ForwardJob job) {
        RuntimeException why = job.abandoned().get();
        return why != null && withdraw(job, why);
    }

    /**
     * Takes {@code job} out of the queue's accounting and answers it with {@code why}, unless a
     * step took it first. Any thread. True when it was still queued.
     */
    boolean withdraw(ForwardJob job, RuntimeException why) {
        if (!slots.leave(job)) {
            return false;
        }
        job.result().completeExceptionally(why);
        listener.onAbandoned();
        return true;
    }

    /** Answers every waiting request with {@code closed}: the scheduler stopped. */
    void failAll(A2aException closed) {
        for (ForwardJob job : pending) {
            job.result().completeExceptionally(closed);
        }
    }
}
