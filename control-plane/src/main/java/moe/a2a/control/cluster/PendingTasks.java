package moe.a2a.control.cluster;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import moe.a2a.comm.A2aException;

/**
 * Tasks (steps or rank tasks) sent to every rank and not yet answered by all of them, by id, in the
 * order sent: each rank's answer completes its part, and a broken group fails them all. Not
 * thread-safe: guarded by {@link RemoteCluster}'s lock.
 *
 * @param <T> one rank's answer
 */
final class PendingTasks<T> {
    /** A task just opened: its id, and one part per rank, in rank order. */
    record Task<A>(long id, List<CompletableFuture<A>> parts) {}

    private final int worldSize;
    private final Map<Long, List<CompletableFuture<T>>> byId = new LinkedHashMap<>();
    private long nextId;

    PendingTasks(int worldSize) {
        this.worldSize = worldSize;
    }

    /** Takes the next id and waits for every rank's answer to it. */
    Task<T> open() {
        long id = nextId++;
        List<CompletableFuture<T>> parts = new ArrayList<>(worldSize);
        for (int r = 0; r < worldSize; r++) {
            parts.add(new CompletableFuture<>());
        }
        byId.put(id, parts);
        return new Task<>(id, parts);
    }

    boolean contains(long id) {
        return byId.containsKey(id);
    }

    /**
     * Completes {@code rank}'s part; the task stops pending once every part is done. An id no
     * longer pending is ignored: the group broke first and already failed it.
     */
    void complete(long id, int rank, T answer) {
        List<CompletableFuture<T>> parts = byId.get(id);
        if (parts == null) {
            return;
        }
        parts.get(rank).complete(answer);
        for (CompletableFuture<T> part : parts) {
            if (!part.isDone()) {
                return;
            }
        }
        byId.remove(id);
    }

    /** Fails every part of task {@code id}, if it is still pending, and forgets it. */
    void fail(long id, A2aException failure) {
        List<CompletableFuture<T>> parts = byId.remove(id);
        if (parts != null) {
            for (CompletableFuture<T> part : parts) {
                part.completeExceptionally(failure);
            }
        }
    }

    /** Fails every part of every pending task, and forgets them. */
    void failAll(A2aException failure) {
        for (List<CompletableFuture<T>> parts : byId.values()) {
            for (CompletableFuture<T> part : parts) {
                part.completeExceptionally(failure);
            }
        }
        byId.clear();
    }
}
