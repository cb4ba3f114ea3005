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
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import moe.a2a.dispatch.DType;
import moe.a2a.experts.RankStepResult;
import moe.a2a.experts.RoutingInput;

/**
 * Batches queued Forward requests into steps and runs them on the cluster, one step at a time.
 * A step takes the oldest request plus every later one that batches with it (same layer, dtype
 * and routing kind) up to the token budget; the others keep their place in the queue. The step's
 * tokens are split evenly across the ranks as their home ranks, so they really cross ranks; each
 * request gets back exactly its rows. gRPC threads call {@link #submit}; one scheduler thread
 * owns everything else.
 */
public final class StepScheduler implements AutoCloseable {
    private final RankGroup cluster;
    private final int maxBatchTokens;
    private final int maxQueuedRequests;
    private final StepListener listener;
    private final BlockingQueue<ForwardJob> incoming = new LinkedBlockingQueue<>();
    private final ArrayDeque<ForwardJob> pending = new ArrayDeque<>();
    private final Thread thread;
    private final ByteBuffer[] rankTokens;
    private final AtomicInteger queued = new AtomicInteger();
    private volatile boolean running = true;
    private long nextStepId;

    public StepScheduler(RankGroup cluster, int maxBatchTokens, int maxQueuedRequests, StepListener listener) {
        if (maxBatchTokens <= 0) {
            throw new IllegalArgumentException("maxBatchTokens: " + maxBatchTokens + " (expected: > 0)");
        }
        this.cluster = cluster;
        this.maxBatchTokens = maxBatchTokens;
        this.maxQueuedRequests = maxQueuedRequests;
        this.listener = listener;
        this.rankTokens = new ByteBuffer[cluster.worldSize()];
        for (int r = 0; r < rankTokens.length; r++) {
            rankTokens[r] = ByteBuffer.allocateDirect(0);
        }
        this.thread = new Thread(this::loop, "moe-a2a-scheduler");
        this.thread.setDaemon(true);
        this.thread.start();
    }

    /**
     * Queues a job; its future completes with the answer or the step's failure.
     *
     * @throws RejectedExecutionException when the queue is full or the scheduler is closed
     */
    public void submit(ForwardJob job) {
        if (!running) {
            throw new RejectedExecutionException("scheduler closed");
        }
        if (queued.incrementAndGet() > maxQueuedRequests) {
            queued.decrementAndGet();
            throw new RejectedExecutionException(
                    "request queue full: queued=" + maxQueuedRequests + " (retry later)");
        }
        incoming.add(job);
    }

    private void loop() {
        while (running) {
            try {
                if (pending.isEmpty()) {
                    pending.add(incoming.take());
                }
                incoming.drainTo(pending);
                List<ForwardJob> batch = nextBatch();
                queued.addAndGet(-batch.size());
                runStep(batch);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private List<ForwardJob> nextBatch() {
        ForwardJob first = pending.poll();
        List<ForwardJob> batch = new ArrayList<>();
        batch.add(first);
        long tokens = first.numTokens();
        for (Iterator<ForwardJob> it = pending.iterator(); it.hasNext(); ) {
            ForwardJob job = it.next();
            if (job.batchesWith(first) && tokens + job.numTokens() <= maxBatchTokens) {
                batch.add(job);
                tokens += job.numTokens();
                it.remove();
            }
        }
        return batch;
    }

    private void runStep(List<ForwardJob> batch) {
        final long stepId = nextStepId++;
        final long startNanos = System.nanoTime();
        final ForwardJob first = batch.get(0);
        final DType dtype = first.dtype();
        final int hidden = cluster.model().hidden();
        final int rowBytes = hidden * dtype.sizeBytes();
        final int n = cluster.worldSize();
        int total = 0;
        for (ForwardJob job : batch) {
            total += job.numTokens();
        }
        int[] rankStart = new int[n + 1];
        for (int r = 0; r <= n; r++) {
            rankStart[r] = (int) ((long) r * total / n);
        }
        int[] counts = new int[n];
        RoutingInput[] routing = new RoutingInput[n];
        for (int r = 0; r < n; r++) {
            counts[r] = rankStart[r + 1] - rankStart[r];
            rankTokens[r] = fill(rankTokens[r], batch, rankStart[r], counts[r], rowBytes);
            routing[r] = RoutingSlices.slice(batch, rankStart[r], counts[r], cluster.model());
        }
        RankStepResult[] results;
        try {
            results = cluster.step(first.layer(), dtype, rankTokens, counts, routing);
        } catch (RuntimeException e) {
            listener.onStepFailed(e);
            for (ForwardJob job : batch) {
                job.result().completeExceptionally(e);
            }
            return;
        }
        StepStatsSnapshot stats = summarize(stepId, first.layer(), batch.size(), total, results);
        long[] queueNs = new long[batch.size()];
        int row = 0;
        for (int i = 0; i < batch.size(); i++) {
            ForwardJob job = batch.get(i);
            queueNs[i] = startNanos - job.enqueuedNanos();
            ByteString output = cut(results, rankStart, row, job.numTokens(), rowBytes);
            row += job.numTokens();
            job.result().complete(new ForwardOutcome(output, stats, queueNs[i]));
        }
        listener.onStep(stats, queueNs);
    }

    /** Copies global rows {@code [from, from+count)} of the batch into a rank's input buffer. */
    private static ByteBuffer fill(ByteBuffer buffer, List<ForwardJob> batch, int from, int count, int rowBytes) {
        ByteBuffer out = buffer.capacity() >= count * rowBytes ? buffer
                : ByteBuffer.allocateDirect(count * rowBytes).order(ByteOrder.LITTLE_ENDIAN);
        int jobStart = 0;
        int written = 0;
        for (ForwardJob job : batch) {
            int jobEnd = jobStart + job.numTokens();
            int lo = Math.max(from, jobStart);
            int hi = Math.min(from + count, jobEnd);
            if (lo < hi) {
                ByteString part = job.tokens().substring((lo - jobStart) * rowBytes, (hi - jobStart) * rowBytes);
                part.copyTo(out.clear().position(written * rowBytes));
                written += hi - lo;
            }
            jobStart = jobEnd;
        }
        return out.clear();
    }

    /** The request's rows {@code [from, from+count)} of the step output, from whichever ranks hold them. */
    private static ByteString cut(RankStepResult[] results, int[] rankStart, int from, int count, int rowBytes) {
        byte[] out = new byte[count * rowBytes];
        for (int r = 0; r < results.length; r++) {
            int lo = Math.max(from, rankStart[r]);
            int hi = Math.min(from + count, rankStart[r + 1]);
            if (lo < hi) {
                results[r].output().get((lo - rankStart[r]) * rowBytes, out, (lo - from) * rowBytes, (hi - lo) * rowBytes);
            }
        }
        return UnsafeByteOperations.unsafeWrap(out);
    }

    private StepStatsSnapshot summarize(long stepId, int layer, int requests, long tokens, RankStepResult[] results) {
        int n = results.length;
        long[] perRank = new long[n];
        long[] perExpert = new long[cluster.model().experts()];
        long route = 0;
        long dispatch = 0;
        long expert = 0;
        long combine = 0;
        for (RankStepResult r : results) {
            for (int d = 0; d < n; d++) {
                perRank[d] += r.tokensPerRank()[d];
            }
            for (int e = 0; e < perExpert.length; e++) {
                perExpert[e] += r.tokensPerExpert()[e];
            }
            route = Math.max(route, r.routeNs());
            dispatch = Math.max(dispatch, r.dispatchNs());
            expert = Math.max(expert, r.expertNs());
            combine = Math.max(combine, r.combineNs());
        }
        return new StepStatsSnapshot(stepId, layer, requests, tokens, perRank, perExpert,
                route, dispatch, expert, combine);
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
        RejectedExecutionException closed = new RejectedExecutionException("server shutting down");
        incoming.drainTo(pending);
        for (ForwardJob job : pending) {
            job.result().completeExceptionally(closed);
        }
    }
}
