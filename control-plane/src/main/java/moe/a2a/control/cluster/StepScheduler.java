package moe.a2a.control.cluster;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import moe.a2a.comm.A2aException;
import moe.a2a.dispatch.CapacityFilter;
import moe.a2a.experts.RankStepResult;
import moe.a2a.experts.RoutingInput;
import moe.a2a.kernels.DType;
import moe.a2a.metrics.StepListener;
import moe.a2a.metrics.StepStatsSnapshot;
import org.jspecify.annotations.Nullable;

/**
 * Batches queued Forward requests into steps and runs them on the cluster, keeping up to {@code
 * maxStepsInFlight} steps submitted so that the next step's tokens travel while this one exchanges
 * (the ranks run steps in submission order). A step takes the oldest request plus every later one
 * that batches with it (same layer, dtype and routing kind) up to the token budget; the others keep
 * their place in the queue. The step's tokens are split evenly across the serving ranks as their
 * home ranks, so they really cross ranks; each request gets back exactly its rows. Between steps,
 * the {@link Rebalancer} may switch a layer to a new placement. gRPC threads call {@link #submit};
 * one scheduler thread owns everything else.
 */
public final class StepScheduler implements AutoCloseable {
    private final RankGroup cluster;
    private final int maxBatchTokens;
    private final double capacityFactor;
    private final int maxQueuedRequests;
    private final long maxQueuedTokens;
    private final StepListener listener;
    private final Rebalancer rebalancer;

    /** {@link ForwardJob}s and {@link BetweenSteps} work, in arrival order. */
    private final BlockingQueue<Object> incoming = new LinkedBlockingQueue<>();

    private final ArrayDeque<ForwardJob> pending = new ArrayDeque<>();
    private final ArrayDeque<BetweenSteps> between = new ArrayDeque<>();
    private final ArrayDeque<StepInFlight> inFlight = new ArrayDeque<>();
    private final int maxStepsInFlight;
    private final Thread thread;
    private final AtomicInteger queued = new AtomicInteger();
    private final AtomicLong queuedTokens = new AtomicLong();
    private volatile boolean running = true;
    private volatile boolean accepting = true;
    private long nextStepId;

    public StepScheduler(
            RankGroup cluster,
            int maxBatchTokens,
            int maxQueuedRequests,
            long maxQueuedTokens,
            int maxStepsInFlight,
            double capacityFactor,
            StepListener listener,
            Rebalancer rebalancer) {
        if (maxBatchTokens <= 0) {
            throw new IllegalArgumentException(
                    "maxBatchTokens: " + maxBatchTokens + " (expected: > 0)");
        }
        if (maxStepsInFlight <= 0) {
            throw new IllegalArgumentException(
                    "maxStepsInFlight: " + maxStepsInFlight + " (expected: > 0)");
        }
        this.cluster = cluster;
        this.maxBatchTokens = maxBatchTokens;
        this.maxQueuedRequests = maxQueuedRequests;
        this.maxQueuedTokens = maxQueuedTokens;
        this.maxStepsInFlight = maxStepsInFlight;
        this.capacityFactor = capacityFactor;
        this.listener = listener;
        this.rebalancer = rebalancer;
        this.thread = new Thread(this::loop, "moe-a2a-scheduler");
        this.thread.setDaemon(true);
        this.thread.start();
    }

    /**
     * Queues a job; its future completes with the answer or the step's failure.
     *
     * @throws RejectedExecutionException when the queue is full
     * @throws A2aException when the server is shutting down
     */
    public void submit(ForwardJob job) {
        submit(job, false);
    }

    /**
     * Queues a job, in the queue slot {@link #reserveSlot} took for it when {@code slotReserved}
     * (the slot is then this method's: kept by the job, or given back if the job is refused).
     *
     * @throws RejectedExecutionException when the queue is full
     * @throws A2aException when the server is shutting down
     */
    public void submit(ForwardJob job, boolean slotReserved) {
        if (!running || !accepting) {
            if (slotReserved) {
                releaseSlot();
            }
            throw new A2aException("server shutting down");
        }
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
        incoming.add(job);
    }

    /**
     * Takes a queue slot for a request whose tokens have not arrived yet, or says why there is
     * none: the queue holds its most requests, or the server is shutting down. A slot taken is
     * handed to {@link #submit(ForwardJob, boolean)} or given back with {@link #releaseSlot}.
     */
    public @Nullable RuntimeException reserveSlot() {
        if (!running || !accepting) {
            return new A2aException("server shutting down");
        }
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

    /** Gives back a slot {@link #reserveSlot} took for a request that never reached submit. */
    public void releaseSlot() {
        queued.decrementAndGet();
    }

    /**
     * Runs {@code work} on the ranks while no step is in flight: steps already submitted finish
     * first, and later ones wait until the work's future completes. For benchmarks on the live data
     * plane. The returned future completes as the work's does.
     */
    public <T> CompletableFuture<T> runBetweenSteps(Supplier<CompletableFuture<T>> work) {
        if (!running || !accepting) {
            throw new A2aException("server shutting down");
        }
        CompletableFuture<T> result = new CompletableFuture<>();
        incoming.add(
                new BetweenSteps(
                        () ->
                                work.get()
                                        .whenComplete(
                                                (value, failure) -> {
                                                    if (failure != null) {
                                                        result.completeExceptionally(failure);
                                                    } else {
                                                        result.complete(value);
                                                    }
                                                }),
                        result));
        return result;
    }

    /**
     * Work that needs the ranks to itself; {@code start} launches it and returns its completion.
     */
    private record BetweenSteps(
            Supplier<CompletableFuture<?>> start, CompletableFuture<?> result) {}

    /** A step submitted to the ranks and not yet answered. */
    private record StepInFlight(
            long stepId,
            List<ForwardJob> batch,
            int[] rankStart,
            int rowBytes,
            long placementVersion,
            long startNanos,
            CompletableFuture<RankStepResult[]> results) {}

    private void loop() {
        while (running) {
            try {
                for (Object work = incoming.poll(); work != null; work = incoming.poll()) {
                    accept(work);
                }
                if (!between.isEmpty()) {
                    if (!inFlight.isEmpty()) {
                        finish(inFlight.poll());
                    } else {
                        runBetween(between.poll());
                    }
                } else if (pending.isEmpty() && inFlight.isEmpty()) {
                    accept(incoming.take());
                } else if (!pending.isEmpty() && inFlight.size() < maxStepsInFlight) {
                    rebalancer.beforeStep();
                    List<ForwardJob> batch = nextBatch();
                    if (!batch.isEmpty()) {
                        inFlight.add(submit(batch));
                    }
                } else {
                    finish(inFlight.poll());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private void accept(Object work) {
        if (work instanceof ForwardJob job) {
            pending.add(job);
        } else {
            between.add((BetweenSteps) work);
        }
    }

    private void runBetween(BetweenSteps work) throws InterruptedException {
        try {
            work.start().get().get();
        } catch (ExecutionException e) {
            // the caller's future carries the failure
        } catch (RuntimeException e) {
            work.result().completeExceptionally(e);
        }
    }

    /**
     * The oldest request still wanted and those that batch with it, their queue slots given back;
     * requests whose caller gave up are answered with why and dropped on the way, and withdrawn
     * ones just dropped. Empty when none is left.
     */
    private List<ForwardJob> nextBatch() {
        List<ForwardJob> batch = new ArrayList<>();
        ForwardJob first = null;
        while (first == null && !pending.isEmpty()) {
            ForwardJob job = pending.poll();
            first = abandon(job) || !leaveQueue(job) ? null : job;
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
                    && leaveQueue(job)) {
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
     * step took it first; from any thread, e.g. as its caller cancels, so that its slot is free at
     * once even while a long step runs. True when it was still queued.
     */
    public boolean withdraw(ForwardJob job, RuntimeException why) {
        if (!leaveQueue(job)) {
            return false;
        }
        job.result().completeExceptionally(why);
        listener.onAbandoned();
        return true;
    }

    /** Gives {@code job}'s queue slot back, once: true for the caller that did. */
    private boolean leaveQueue(ForwardJob job) {
        if (!job.queued().compareAndSet(true, false)) {
            return false;
        }
        queued.decrementAndGet();
        queuedTokens.addAndGet(-job.numTokens());
        return true;
    }

    /**
     * Cuts the batch into the ranks' shares and starts the step; the next one may start before it
     * ends.
     */
    private StepInFlight submit(List<ForwardJob> batch) {
        final long stepId = nextStepId++;
        final long startNanos = System.nanoTime();
        final ForwardJob first = batch.get(0);
        final DType dtype = first.dtype();
        final int rowBytes = cluster.model().hidden() * dtype.sizeBytes();
        final int n = cluster.worldSize();
        int total = 0;
        for (ForwardJob job : batch) {
            total += job.numTokens();
        }
        // home ranks share the tokens evenly; a rank the cluster serves without gets none
        int[] serving = cluster.servingRanks();
        int[] rankStart = new int[n + 1];
        int before = 0;
        for (int r = 0; r < n; r++) {
            rankStart[r] = (int) ((long) before * total / serving.length);
            if (before < serving.length && serving[before] == r) {
                before++;
            }
        }
        rankStart[n] = total;
        int[] counts = new int[n];
        ByteBuffer[] tokens = new ByteBuffer[n];
        RoutingInput[] routing = new RoutingInput[n];
        for (int r = 0; r < n; r++) {
            counts[r] = rankStart[r + 1] - rankStart[r];
            tokens[r] = fill(batch, rankStart[r], counts[r], rowBytes);
            routing[r] = RoutingSlices.slice(batch, rankStart[r], counts[r], cluster.model());
        }
        int[] capacities = capacities(rankStart, total);
        return new StepInFlight(
                stepId,
                batch,
                rankStart,
                rowBytes,
                cluster.placements().get(first.layer()).version(),
                startNanos,
                cluster.submit(first.layer(), dtype, tokens, counts, routing, capacities));
    }

    /**
     * Each rank's share of every expert's capacity this step: {@code ceil(CF · T · K / E)} pairs
     * split in proportion to the ranks' tokens, so that the shares add up to it exactly; unlimited
     * when the factor is 0 (dropless).
     */
    private int[] capacities(int[] rankStart, int total) {
        int n = rankStart.length - 1;
        long capacity =
                CapacityFilter.stepCapacity(
                        capacityFactor, total, cluster.model().topK(), cluster.model().experts());
        int[] out = new int[n];
        for (int r = 0; r < n; r++) {
            out[r] = CapacityFilter.share(capacity, rankStart[r], rankStart[r + 1], total);
        }
        return out;
    }

    /**
     * Waits for the step and answers its requests: each gets exactly its rows, or the step's
     * failure.
     */
    private void finish(StepInFlight step) throws InterruptedException {
        RankStepResult[] results;
        try {
            results = step.results().get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            listener.onStepFailed(cause, step.rankStart()[step.rankStart().length - 1]);
            for (ForwardJob job : step.batch()) {
                job.result().completeExceptionally(cause);
            }
            return;
        }
        List<ForwardJob> batch = step.batch();
        long total = step.rankStart()[step.rankStart().length - 1];
        StepStatsSnapshot stats =
                summarize(
                        step.stepId(),
                        batch.get(0).layer(),
                        step.placementVersion(),
                        batch.size(),
                        total,
                        results);
        long[] queueNs = new long[batch.size()];
        int row = 0;
        for (int i = 0; i < batch.size(); i++) {
            ForwardJob job = batch.get(i);
            queueNs[i] = step.startNanos() - job.enqueuedNanos();
            ByteString output =
                    cut(results, step.rankStart(), row, job.numTokens(), step.rowBytes());
            row += job.numTokens();
            job.result().complete(new ForwardOutcome(output, stats, queueNs[i]));
        }
        listener.onStep(stats, queueNs);
        rebalancer.onStep(stats);
    }

    /** Global rows {@code [from, from+count)} of the batch, as a rank's input buffer of its own. */
    private static ByteBuffer fill(List<ForwardJob> batch, int from, int count, int rowBytes) {
        ByteBuffer out = ByteBuffer.allocate(count * rowBytes).order(ByteOrder.LITTLE_ENDIAN);
        int jobStart = 0;
        int written = 0;
        for (ForwardJob job : batch) {
            int jobEnd = jobStart + job.numTokens();
            int lo = Math.max(from, jobStart);
            int hi = Math.min(from + count, jobEnd);
            if (lo < hi) {
                ByteString part =
                        job.tokens()
                                .substring((lo - jobStart) * rowBytes, (hi - jobStart) * rowBytes);
                part.copyTo(out.clear().position(written * rowBytes));
                written += hi - lo;
            }
            jobStart = jobEnd;
        }
        return out.clear();
    }

    /**
     * The request's rows {@code [from, from+count)} of the step output, from whichever ranks hold
     * them.
     */
    private static ByteString cut(
            RankStepResult[] results, int[] rankStart, int from, int count, int rowBytes) {
        byte[] out = new byte[count * rowBytes];
        for (int r = 0; r < results.length; r++) {
            int lo = Math.max(from, rankStart[r]);
            int hi = Math.min(from + count, rankStart[r + 1]);
            if (lo < hi) {
                results[r]
                        .output()
                        .get(
                                (lo - rankStart[r]) * rowBytes,
                                out,
                                (lo - from) * rowBytes,
                                (hi - lo) * rowBytes);
            }
        }
        return UnsafeByteOperations.unsafeWrap(out);
    }

    private StepStatsSnapshot summarize(
            long stepId,
            int layer,
            long placementVersion,
            int requests,
            long tokens,
            RankStepResult[] results) {
        int n = results.length;
        long[] perRank = new long[n];
        long[] perExpert = new long[cluster.model().experts()];
        long[] dropped = new long[cluster.model().experts()];
        long[][] sent = new long[n][];
        long[][] received = new long[n][];
        long route = 0;
        long dispatch = 0;
        long expert = 0;
        long combine = 0;
        for (int rank = 0; rank < n; rank++) {
            RankStepResult r = results[rank];
            sent[rank] = r.bytesSent();
            received[rank] = r.bytesReceived();
            for (int d = 0; d < n; d++) {
                perRank[d] += r.tokensPerRank()[d];
            }
            for (int e = 0; e < perExpert.length; e++) {
                perExpert[e] += r.tokensPerExpert()[e];
                dropped[e] += r.droppedPerExpert()[e];
            }
            route = Math.max(route, r.routeNs());
            dispatch = Math.max(dispatch, r.dispatchNs());
            expert = Math.max(expert, r.expertNs());
            combine = Math.max(combine, r.combineNs());
        }
        return new StepStatsSnapshot(
                stepId,
                layer,
                placementVersion,
                requests,
                tokens,
                perRank,
                perExpert,
                dropped,
                sent,
                received,
                route,
                dispatch,
                expert,
                combine);
    }

    /** Requests waiting for a step. Any thread. */
    public int queuedRequests() {
        return queued.get();
    }

    /** Tokens of the requests waiting for a step. Any thread. */
    public long queuedTokens() {
        return queuedTokens.get();
    }

    /**
     * Refuses new requests (UNAVAILABLE) from now on; those already queued or in a step still run.
     */
    public void stopAccepting() {
        accepting = false;
    }

    @Override
    public void close() {
        running = false;
        thread.interrupt();
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        A2aException closed = new A2aException("server shutting down");
        for (Object work = incoming.poll(); work != null; work = incoming.poll()) {
            accept(work);
        }
        for (BetweenSteps work : between) {
            work.result().completeExceptionally(closed);
        }
        for (ForwardJob job : pending) {
            job.result().completeExceptionally(closed);
        }
        for (StepInFlight step : inFlight) {
            for (ForwardJob job : step.batch()) {
                job.result().completeExceptionally(closed);
            }
        }
    }
}
