package moe.a2a.control.cluster;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.PeerFailedException;
import moe.a2a.comm.local.LocalGroup;
import moe.a2a.dispatch.DType;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankStepResult;
import moe.a2a.experts.RankWorker;
import moe.a2a.experts.RoutingInput;
import moe.a2a.experts.WeightSource;

/**
 * {@code N} ranks in this JVM on the in-process transport, each owned by its own thread. A step
 * runs on every rank at once; if any rank fails, the group is aborted (so the others fail fast
 * instead of waiting out the timeout) and replaced before the next step. Called by one thread,
 * the scheduler.
 */
public final class EmbeddedCluster implements RankGroup {
    private final ModelConfig model;
    private final Placement placement;
    private final long exchangeTimeoutNs;
    private final ExecutorService[] rankThreads;
    private final RankWorker[] workers;
    private LocalGroup group;
    private int rebuilds;

    public EmbeddedCluster(ModelConfig model, WeightSource weights, int worldSize, long exchangeTimeoutNs) {
        if (worldSize <= 0) {
            throw new IllegalArgumentException("worldSize: " + worldSize + " (expected: > 0)");
        }
        this.model = model;
        this.placement = Placement.contiguous(model.experts(), worldSize);
        this.exchangeTimeoutNs = exchangeTimeoutNs;
        this.group = new LocalGroup(worldSize, exchangeTimeoutNs);
        this.rankThreads = new ExecutorService[worldSize];
        this.workers = new RankWorker[worldSize];
        List<Future<RankWorker>> loading = new ArrayList<>();
        for (int r = 0; r < worldSize; r++) {
            final int rank = r;
            rankThreads[r] = Executors.newSingleThreadExecutor(runnable -> {
                Thread t = new Thread(runnable, "moe-a2a-rank-" + rank);
                t.setDaemon(true);
                return t;
            });
            final LocalGroup g = group;
            loading.add(rankThreads[r].submit(
                    () -> new RankWorker(model, weights, placement, g.communicator(rank))));
        }
        for (int r = 0; r < worldSize; r++) {
            workers[r] = await(loading.get(r));
        }
    }

    @Override
    public String transport() {
        return "local";
    }

    @Override
    public ModelConfig model() {
        return model;
    }

    @Override
    public Placement placement() {
        return placement;
    }

    @Override
    public int worldSize() {
        return workers.length;
    }

    /** Times the group was replaced after a failed step. */
    public int rebuilds() {
        return rebuilds;
    }

    /** {@inheritDoc} On failure the in-process group is rebuilt before this returns. */
    @Override
    public RankStepResult[] step(int layer, DType dtype, ByteBuffer[] tokens, int[] counts, RoutingInput[] routing) {
        final LocalGroup g = group;
        List<Future<RankStepResult>> running = new ArrayList<>(workers.length);
        for (int r = 0; r < workers.length; r++) {
            final int rank = r;
            running.add(rankThreads[r].submit(() -> {
                try {
                    return workers[rank].step(layer, dtype, tokens[rank], counts[rank], routing[rank]);
                } catch (RuntimeException | Error e) {
                    g.communicator(rank).abort(e);
                    throw e;
                }
            }));
        }
        RankStepResult[] results = new RankStepResult[workers.length];
        Throwable root = null;
        for (int r = 0; r < workers.length; r++) {
            try {
                results[r] = running.get(r).get();
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                if (root == null || (root instanceof PeerFailedException && !(cause instanceof PeerFailedException))) {
                    root = cause;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                root = e;
            }
        }
        if (root != null) {
            rebuild();
            throw root instanceof A2aException a2a ? a2a
                    : new A2aException("step failed: layer=" + layer + ", cause=" + root, root);
        }
        return results;
    }

    private void rebuild() {
        rebuilds++;
        group = new LocalGroup(workers.length, exchangeTimeoutNs);
        final LocalGroup g = group;
        List<Future<?>> rebinding = new ArrayList<>();
        for (int r = 0; r < workers.length; r++) {
            final int rank = r;
            rebinding.add(rankThreads[r].submit(() -> workers[rank].rebind(g.communicator(rank))));
        }
        for (Future<?> f : rebinding) {
            await(f);
        }
    }

    @Override
    public void close() {
        group.communicator(0).close();
        for (ExecutorService t : rankThreads) {
            t.shutdownNow();
        }
    }

    private static <T> T await(Future<T> future) {
        try {
            return future.get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException re) {
                throw re;
            }
            throw new A2aException("rank failed to start: " + cause, cause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new A2aException("interrupted while starting ranks", e);
        }
    }
}
