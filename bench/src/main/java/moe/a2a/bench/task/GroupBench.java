package moe.a2a.bench.task;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import moe.a2a.bench.BenchScope;
import moe.a2a.bench.BenchTaskCodec;
import moe.a2a.bench.CollectiveCase;
import moe.a2a.bench.CollectiveTimes;
import moe.a2a.bench.RankTimes;
import moe.a2a.control.cluster.RankGroup;
import moe.a2a.control.cluster.StepScheduler;
import moe.a2a.experts.task.RankTask;
import moe.a2a.v1.BenchRankResult;
import moe.a2a.v1.BenchTask;
import moe.a2a.workload.BenchWorkload;

/**
 * The bench on a serving group: each run a {@link RankTask} on every rank's live communicators,
 * between steps, and the ranks' answers decoded in rank order. Called from any thread; the
 * scheduler orders the runs with the steps.
 */
public final class GroupBench {
    private final RankGroup group;
    private final StepScheduler scheduler;

    public GroupBench(RankGroup group, StepScheduler scheduler) {
        this.group = group;
        this.scheduler = scheduler;
    }

    /**
     * Runs a benchmark workload on every rank, returning each rank's times; the workload's rank
     * count must be the group's.
     */
    public CompletableFuture<List<RankTimes>> workload(
            BenchWorkload workload, BenchScope scope, int warmup, int iters) {
        return run(
                WorkloadTaskHandler.KIND,
                BenchTaskCodec.benchTask(workload, scope, warmup, iters),
                BenchTaskCodec::rankTimes);
    }

    /**
     * Runs a collective case on every rank, returning each rank's times and wrong elements; the
     * case's rank count must be the group's.
     */
    public CompletableFuture<List<CollectiveTimes>> collective(
            CollectiveCase c, int warmup, int iters) {
        return run(
                CollectiveTaskHandler.KIND,
                BenchTaskCodec.collectiveBenchTask(c, warmup, iters),
                BenchTaskCodec::collectiveTimes);
    }

    private <T> CompletableFuture<List<T>> run(
            String kind, BenchTask task, Function<BenchRankResult, T> decode) {
        RankTask rankTask = new RankTask(kind, task.toByteArray());
        return scheduler
                .runBetweenSteps(() -> group.onEveryRank(rankTask))
                .thenApply(
                        answers ->
                                answers.stream().map(BenchTaskCodec::result).map(decode).toList());
    }
}
