package moe.a2a.control.cluster;

import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Supplier;
import moe.a2a.comm.A2aException;
import moe.a2a.metrics.StepListener;
import org.jspecify.annotations.Nullable;

/**
 * Batches queued Forward requests into steps and runs them on the cluster, keeping up to {@code
 * maxStepsInFlight} steps submitted so that the next step's tokens travel while this one exchanges
 * (the ranks run steps in submission order). The {@link StepBatcher} picks each step's requests,
 * the {@link StepLauncher} cuts them into the ranks' shares and submits the step, and the {@link
 * StepCompletion} answers each request with exactly its rows. Between steps, the {@link Rebalancer}
 * may switch a layer to a new placement, and {@link #runBetweenSteps} work has the ranks to itself.
 * gRPC threads call {@link #submit}; one scheduler thread owns everything else.
 */
public final class StepScheduler implements AutoCloseable {
    private final Rebalancer rebalancer;
    private final QueueSlots slots;
    private final StepBatcher batcher;
    private final StepLauncher launcher;
    private final StepCompletion completion;

    /** {@link ForwardJob}s and {@link BetweenSteps} work, in arrival order. */
    private final BlockingQueue<Object> incoming = new LinkedBlockingQueue<>();

    private final ArrayDeque<BetweenSteps> between = new ArrayDeque<>();
    private final ArrayDeque<StepInFlight> inFlight = new ArrayDeque<>();

    /** Requests of a step that ran out of memory, each to run again in a step of its own. */
    private final ArrayDeque<ForwardJob> alone = new ArrayDeque<>();

    private final StepListener listener;
    private final int maxStepsInFlight;
    private final Thread thread;
    private volatile boolean running = true;
    private volatile boolean accepting = true;

    public StepScheduler(
            RankGroup cluster,
            int maxBatchTokens,
            int maxQueuedRequests,
            long maxQueuedTokens,
            int maxStepsInFlight,
            double capacityFactor,
            StepListener listener,
            Rebalancer rebalancer,
            @Nullable RoutingRecorder recorder) {
        this(
                cluster,
                maxBatchTokens,
                maxQueuedRequests,
                maxQueuedTokens,
                maxStepsInFlight,
                capacityFactor,
                StepModes.NORMAL,
                listener,
                rebalancer,
                recorder);
    }

    /**
     * With steps exchanged as {@code modes} picks; under {@code --mode low-latency} a batch holds
     * at most the bound times the world size, the tokens a step can spread over its ranks.
     */
    public StepScheduler(
            RankGroup cluster,
            int maxBatchTokens,
            int maxQueuedRequests,
            long maxQueuedTokens,
            int maxStepsInFlight,
            double capacityFactor,
            StepModes modes,
            StepListener listener,
            Rebalancer rebalancer,
            @Nullable RoutingRecorder recorder) {
        if (maxBatchTokens <= 0) {
            throw new IllegalArgumentException(
                    "maxBatchTokens: " + maxBatchTokens + " (expected: > 0)");
        }
        if (maxStepsInFlight <= 0) {
            throw new IllegalArgumentException(
                    "maxStepsInFlight: " + maxStepsInFlight + " (expected: > 0)");
        }
        this.maxStepsInFlight = maxStepsInFlight;
        this.listener = listener;
        this.rebalancer = rebalancer;
        this.slots = new QueueSlots(maxQueuedRequests, maxQueuedTokens);
        this.batcher =
                new StepBatcher(
                        modes.choice() == StepModes.Choice.LOW_LATENCY
                                ? (int)
                                        Math.min(
                                                maxBatchTokens,
                                                (long) modes.maxTokens() * cluster.worldSize())
                                : maxBatchTokens,
                        slots,
                        listener);
        this.launcher = new StepLauncher(cluster, capacityFactor, modes);
        this.completion = new StepCompletion(cluster, listener, rebalancer, recorder);
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
        slots.admit(job, slotReserved);
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
        return slots.reserve();
    }

    /** Gives back a slot {@link #reserveSlot} took for a request that never reached submit. */
    public void releaseSlot() {
        slots.release();
    }

    /**
     * Runs {@code work} on the ranks while no step is in flight: steps already submitted finish
     * first, and later ones wait until the work's future completes. For rank tasks on the live data
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
                } else if (!alone.isEmpty()) {
                    if (inFlight.isEmpty()) {
                        launchAlone(alone.poll());
                    } else {
                        finish(inFlight.poll());
                    }
                } else if (batcher.isEmpty() && inFlight.isEmpty()) {
                    accept(incoming.take());
                } else if (!batcher.isEmpty() && inFlight.size() < maxStepsInFlight) {
                    rebalancer.beforeStep();
                    List<ForwardJob> batch = batcher.nextBatch();
                    if (!batch.isEmpty()) {
                        launch(batch);
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

    /**
     * Starts a step of {@code batch}; if it cannot (its buffers do not fit in the heap, say), its
     * requests fail and the scheduler goes on with the next.
     */
    private void launch(List<ForwardJob> batch) {
        try {
            inFlight.add(launcher.launch(batch));
        } catch (RuntimeException | OutOfMemoryError e) {
            fail(batch, e);
        }
    }

    /** Runs {@code job} again, in a step of its own with no other in flight, unless abandoned. */
    private void launchAlone(ForwardJob job) {
        RuntimeException why = job.abandoned().get();
        if (why != null) {
            job.result().completeExceptionally(why);
            listener.onAbandoned();
        } else {
            launch(List.of(job));
        }
    }

    /**
     * Answers {@code step}'s requests; those it could not answer fail, and the scheduler goes on.
     */
    private void finish(StepInFlight step) throws InterruptedException {
        Throwable failure;
        try {
            failure = completion.finish(step);
        } catch (RuntimeException | OutOfMemoryError e) {
            failure = e;
        }
        if (failure != null) {
            fail(step.batch(), failure);
        }
    }

    /**
     * Fails the requests of {@code batch} not answered yet with {@code failure}; but when several
     * ran out of memory together, each runs again in a step of its own instead, so that a request
     * too big for the server takes only itself down, not the small ones batched with it.
     */
    private void fail(List<ForwardJob> batch, Throwable failure) {
        List<ForwardJob> unanswered = batch.stream().filter(job -> !job.result().isDone()).toList();
        if (unanswered.size() > 1 && OutOfMemory.causeOf(failure) != null) {
            alone.addAll(unanswered);
            return;
        }
        for (ForwardJob job : unanswered) {
            job.result().completeExceptionally(failure);
        }
    }

    private void accept(Object work) {
        if (work instanceof ForwardJob job) {
            batcher.add(job);
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
     * Takes {@code job} out of the queue's accounting and answers it with {@code why}, unless a
     * step took it first; from any thread, e.g. as its caller cancels, so that its slot is free at
     * once even while a long step runs. True when it was still queued.
     */
    public boolean withdraw(ForwardJob job, RuntimeException why) {
        return batcher.withdraw(job, why);
    }

    /** Requests waiting for a step. Any thread. */
    public int queuedRequests() {
        return slots.requests();
    }

    /** Tokens of the requests waiting for a step. Any thread. */
    public long queuedTokens() {
        return slots.tokens();
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
        batcher.failAll(closed);
        for (ForwardJob job : alone) {
            job.result().completeExceptionally(closed);
        }
        for (StepInFlight step : inFlight) {
            for (ForwardJob job : step.batch()) {
                job.result().completeExceptionally(closed);
            }
        }
    }
}
