package moe.a2a.control.cluster;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.IntConsumer;
import moe.a2a.comm.A2aException;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankStepResult;
import moe.a2a.experts.RoutingInput;
import moe.a2a.kernels.DType;
import moe.a2a.protocol.TaskCodec;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.StepFailure;
import moe.a2a.v1.StepResult;

/**
 * The steps sent to the worker processes and not yet answered by every rank: sends each rank its
 * share, completes the step from their results, and breaks the group when a step fails (once the
 * ranks' reports have settled) or hangs past its deadline. A rank the degraded group does without
 * answers idle at once. Not thread-safe: guarded by {@link RemoteCluster}'s lock, which the timer
 * tasks it schedules take too.
 */
final class WorkerSteps {
    private final Object lock;
    private final ServingState state;
    private final Membership membership;
    private final GroupFormation formation;
    private final ModelConfig model;
    private final int worldSize;
    private final long exchangeTimeoutNs;
    private final ScheduledExecutorService timer;

    /** Breaks the group for a reason; called with the lock held. */
    private final Consumer<String> breakGroup;

    private final PendingTasks<RankStepResult> pending;

    /** Failures reported for steps still pending, gathered before the group is broken. */
    private final FailureReports failures = new FailureReports("step");

    private final StragglerWatch stragglers;

    /** Told of each rank newly flagged as a straggler; called with the lock held. */
    private final IntConsumer onStraggler;

    /** Whether the ranks return the expert ids they chose (a routing trace is recorded). */
    private volatile boolean recordRouting;

    WorkerSteps(
            Object lock,
            ServingState state,
            Membership membership,
            GroupFormation formation,
            ModelConfig model,
            int worldSize,
            long exchangeTimeoutNs,
            ScheduledExecutorService timer,
            StragglerWatch stragglers,
            IntConsumer onStraggler,
            Consumer<String> breakGroup) {
        this.lock = lock;
        this.state = state;
        this.membership = membership;
        this.formation = formation;
        this.model = model;
        this.worldSize = worldSize;
        this.exchangeTimeoutNs = exchangeTimeoutNs;
        this.timer = timer;
        this.stragglers = stragglers;
        this.onStraggler = onStraggler;
        this.breakGroup = breakGroup;
        this.pending = new PendingTasks<>(worldSize);
    }

    /**
     * From the next step on, the ranks return their routing; see {@link RankGroup#recordRouting}.
     */
    void recordRouting() {
        recordRouting = true;
    }

    /** Sends every rank of the group its share of a step; see {@link RankGroup#submit}. */
    CompletableFuture<RankStepResult[]> submit(
            int layer,
            DType dtype,
            ByteBuffer[] tokens,
            int[] counts,
            RoutingInput[] routing,
            int[] capacities,
            int lowLatencyTokens) {
        final PendingTasks.Task<RankStepResult> step;
        synchronized (lock) {
            A2aException refused = state.refusal();
            if (refused != null) {
                return CompletableFuture.failedFuture(refused);
            }
            step = pending.open();
            for (int r = 0; r < worldSize; r++) {
                if (!state.inGroup(r)) {
                    if (counts[r] != 0) {
                        pending.fail(
                                step.id(),
                                new A2aException("rank " + r + " is lost; its tokens had no home"));
                        return RankResults.all(step.parts(), layer);
                    }
                    pending.complete(step.id(), r, idle());
                    continue;
                }
                membership.send(
                        r,
                        ControlMessage.newBuilder()
                                .setStep(
                                        TaskCodec.stepTask(
                                                step.id(),
                                                formation.epoch(),
                                                layer,
                                                dtype,
                                                tokens[r],
                                                counts[r],
                                                routing[r],
                                                capacities[r],
                                                model,
                                                recordRouting,
                                                lowLatencyTokens))
                                .build());
            }
        }
        // Losing a worker fails the step at once; this deadline only bounds a hung group.
        timer.schedule(
                () -> {
                    synchronized (lock) {
                        if (pending.contains(step.id())) {
                            breakGroup.accept(
                                    "step " + step.id() + " timed out: some rank never answered");
                        }
                    }
                },
                4 * exchangeTimeoutNs + TimeUnit.SECONDS.toNanos(60),
                TimeUnit.NANOSECONDS);
        return RankResults.all(step.parts(), layer);
    }

    /** Completes {@code rank}'s part of the step it answered. Lock held. */
    void onResult(int rank, StepResult result) {
        int[] flagged = new int[0];
        if (result.getDispatchWaitNsCount() > 0 && pending.contains(result.getStepId())) {
            flagged =
                    stragglers.onWaits(
                            rank,
                            TaskCodec.toArray(result.getDispatchWaitNsList()),
                            TaskCodec.toArray(result.getCombineWaitNsList()),
                            state.groupSize());
        }
        pending.complete(result.getStepId(), rank, TaskCodec.rankStepResult(result));
        for (int r : flagged) {
            onStraggler.accept(r);
        }
    }

    /** Whether {@code failure} is of a step still pending (not an echo of one already failed). */
    boolean pending(StepFailure failure) {
        return pending.contains(failure.getStepId());
    }

    /**
     * Gathers {@code rank}'s failure of a pending step, and breaks the group once every rank of it
     * reported, or the reports settled. Lock held.
     */
    void onFailure(int rank, StepFailure failure) {
        long step = failure.getStepId();
        if (!pending.contains(step)) {
            return;
        }
        if (failures.report(step, rank, failure.getMessage())) {
            timer.schedule(
                    () -> {
                        synchronized (lock) {
                            breakOnFailureLocked(step);
                        }
                    },
                    FailureReports.SETTLE_NANOS,
                    TimeUnit.NANOSECONDS);
        }
        if (failures.allReported(step, state.groupSize())) {
            breakOnFailureLocked(step);
        }
    }

    private void breakOnFailureLocked(long step) {
        String reason = failures.take(step);
        if (reason != null && pending.contains(step)) {
            breakGroup.accept(reason);
        }
    }

    /** Fails every step in flight and forgets their failure reports: the group broke. Lock held. */
    void failAll(A2aException failure) {
        pending.failAll(failure);
        failures.clear();
        stragglers.reset();
    }

    /** A rank outside the group's answer to a step: no tokens, no traffic. */
    private RankStepResult idle() {
        return new RankStepResult(
                ByteBuffer.allocate(0),
                new long[worldSize],
                new long[worldSize],
                new long[model.experts()],
                new long[model.experts()],
                0,
                new long[worldSize],
                new long[worldSize],
                0,
                0,
                0,
                0,
                new int[0]);
    }
}
