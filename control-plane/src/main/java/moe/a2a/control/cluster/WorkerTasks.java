package moe.a2a.control.cluster;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import moe.a2a.comm.A2aException;
import moe.a2a.experts.task.RankTask;
import moe.a2a.protocol.RankTaskCodec;
import moe.a2a.v1.RankTaskResult;

/**
 * The rank tasks sent to every worker process and not yet answered by all of them: a rank's error
 * breaks the group, as a failed step does. Not thread-safe: guarded by {@link RemoteCluster}'s
 * lock.
 */
final class WorkerTasks {
    private final Object lock;
    private final ServingState state;
    private final Membership membership;

    /** Breaks the group for a reason; called with the lock held. */
    private final Consumer<String> breakGroup;

    private final PendingTasks<byte[]> pending;

    /** The kind of each pending task, for the reason a rank's error breaks the group. */
    private final Map<Long, String> kinds = new HashMap<>();

    WorkerTasks(
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

    /** See {@link RankGroup#onEveryRank}: sends a RankTaskRequest to every rank. */
    CompletableFuture<List<byte[]>> onEveryRank(RankTask task) {
        final PendingTasks.Task<byte[]> run;
        synchronized (lock) {
            A2aException refused = state.refusal();
            if (refused != null) {
                return CompletableFuture.failedFuture(refused);
            }
            run = pending.open();
            kinds.put(run.id(), task.kind());
            membership.broadcast(RankTaskCodec.request(run.id(), task));
        }
        List<CompletableFuture<byte[]>> parts = run.parts();
        return CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]))
                .thenApply(ignored -> parts.stream().map(CompletableFuture::join).toList());
    }

    /** Completes {@code rank}'s part of a task, or breaks the group on its error. Lock held. */
    void onResult(int rank, RankTaskResult res) {
        long id = res.getTaskId();
        if (!pending.contains(id)) {
            return;
        }
        if (!res.getError().isEmpty()) {
            breakGroup.accept(
                    "rank task "
                            + kinds.get(id)
                            + " failed on rank "
                            + rank
                            + ": "
                            + res.getError());
            return;
        }
        pending.complete(id, rank, res.getPayload().toByteArray());
        if (!pending.contains(id)) {
            kinds.remove(id);
        }
    }

    /** Fails every task in flight: the group broke. Lock held. */
    void failAll(A2aException failure) {
        pending.failAll(failure);
        kinds.clear();
    }
}
