package moe.a2a.control.cluster;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.LongFunction;
import moe.a2a.bench.BenchScope;
import moe.a2a.bench.BenchTaskCodec;
import moe.a2a.bench.CollectiveCase;
import moe.a2a.bench.CollectiveTimes;
import moe.a2a.bench.RankTimes;
import moe.a2a.comm.A2aException;
import moe.a2a.v1.BenchRankResult;
import moe.a2a.v1.BenchTask;
import moe.a2a.v1.ControlMessage;
import moe.a2a.workload.BenchWorkload;

/**
 * The benchmark runs sent to every worker process and not yet answered by all of them: a rank's
 * error breaks the group, as a failed step does. Not thread-safe: guarded by {@link
 * RemoteCluster}'s lock.
 */
final class WorkerBenches {
    private final Object lock;
    private final ServingState state;
    private final Membership membership;

    /** Breaks the group for a reason; called with the lock held. */
    private final Consumer<String> breakGroup;

    private final PendingTasks<BenchRankResult> pending;

    WorkerBenches(
            Object lock,
            ServingState state,
            Membership membership,
            int worldSize,
            Consumer<String> breakGroup) {
        this.lock = lock;
        this.state = state;
        this.membership = membership;
        this.breakGroup = breakGroup;
        this.pending = new PendingTasks<>(worldSize);
    }

    /** See {@link RankGroup#bench}. */
    CompletableFuture<List<RankTimes>> bench(
            BenchWorkload workload, BenchScope scope, int warmup, int iters) {
        return run(
                id -> BenchTaskCodec.benchTask(id, workload, scope, warmup, iters),
                BenchTaskCodec::rankTimes);
    }

    /** See {@link RankGroup#benchCollective}. */
    CompletableFuture<List<CollectiveTimes>> benchCollective(
            CollectiveCase c, int warmup, int iters) {
        return run(
                id -> BenchTaskCodec.collectiveBenchTask(id, c, warmup, iters),
                BenchTaskCodec::collectiveTimes);
    }

    /** Sends a BenchTask to every rank; completes with every rank's answer, decoded. */
    private <T> CompletableFuture<List<T>> run(
            LongFunction<BenchTask> task, Function<BenchRankResult, T> decode) {
        final PendingTasks.Task<BenchRankResult> run;
        synchronized (lock) {
            A2aException refused = state.refusal();
            if (refused != null) {
                return CompletableFuture.failedFuture(refused);
            }
            run = pending.open();
            membership.broadcast(
                    ControlMessage.newBuilder().setBench(task.apply(run.id())).build());
        }
        List<CompletableFuture<BenchRankResult>> parts = run.parts();
        return CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]))
                .thenApply(
                        ignored ->
                                parts.stream().map(CompletableFuture::join).map(decode).toList());
    }

    /** Completes {@code rank}'s part of a run, or breaks the group on its error. Lock held. */
    void onResult(int rank, BenchRankResult res) {
        if (!pending.contains(res.getBenchId())) {
            return;
        }
        if (!res.getError().isEmpty()) {
            breakGroup.accept("benchmark failed on rank " + rank + ": " + res.getError());
            return;
        }
        pending.complete(res.getBenchId(), rank, res);
    }

    /** Fails every run in flight: the group broke. Lock held. */
    void failAll(A2aException failure) {
        pending.failAll(failure);
    }
}
