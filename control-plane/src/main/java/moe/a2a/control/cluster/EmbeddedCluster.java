package moe.a2a.control.cluster;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.IntStream;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import moe.a2a.comm.local.LocalGroup;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.CpuRankRuntime;
import moe.a2a.experts.LayerSlots;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankStepResult;
import moe.a2a.experts.RoutingInput;
import moe.a2a.experts.WeightSource;
import moe.a2a.experts.task.FlatRankContext;
import moe.a2a.experts.task.RankTask;
import moe.a2a.experts.task.RankTaskHandlers;
import moe.a2a.kernels.DType;

/**
 * {@code N} ranks in this JVM on the in-process transport, each owned by its own thread. A step
 * runs on every rank at once, and steps queue on the rank threads in order; if any rank fails, the
 * group is aborted (so the others fail fast instead of waiting out the timeout) and replaced before
 * the next step. A new placement of a layer is staged on a loader thread and installed by each rank
 * thread between steps. Called by one thread, the scheduler.
 */
public final class EmbeddedCluster implements RankGroup {
    private final ModelConfig model;
    private final LayerPlacements placements;
    private final long exchangeTimeoutNs;
    private final ExecutorService[] rankThreads;
    private final CpuRankRuntime[] workers;

    /** Loads staged placements' weights, so that no rank thread waits for them. */
    private final ExecutorService loader =
            Executors.newSingleThreadExecutor(
                    runnable -> {
                        Thread t = new Thread(runnable, "moe-a2a-placement-loader");
                        t.setDaemon(true);
                        return t;
                    });

    /** Per layer, each rank's staged slots, until activated. */
    private final Map<Integer, LayerSlots[]> staged = new ConcurrentHashMap<>();

    private LocalGroup group;
    private volatile int rebuilds;

    public EmbeddedCluster(
            ModelConfig model, WeightSource weights, int worldSize, long exchangeTimeoutNs) {
        this(model, weights, contiguous(model, worldSize), exchangeTimeoutNs);
    }

    /**
     * @param placement where the experts live, as this cluster's coordinator decided; its world
     *     size is the group's
     */
    public EmbeddedCluster(
            ModelConfig model, WeightSource weights, Placement placement, long exchangeTimeoutNs) {
        RankGroup.checkPlacement(placement, model);
        final int worldSize = placement.worldSize();
        this.model = model;
        this.placements = new LayerPlacements(model.layers(), placement);
        this.exchangeTimeoutNs = exchangeTimeoutNs;
        this.group = new LocalGroup(worldSize, exchangeTimeoutNs);
        this.rankThreads = new ExecutorService[worldSize];
        this.workers = new CpuRankRuntime[worldSize];
        List<Future<CpuRankRuntime>> loading = new ArrayList<>();
        for (int r = 0; r < worldSize; r++) {
            final int rank = r;
            rankThreads[r] =
                    Executors.newSingleThreadExecutor(
                            runnable -> {
                                Thread t = new Thread(runnable, "moe-a2a-rank-" + rank);
                                t.setDaemon(true);
                                return t;
                            });
            final LocalGroup g = group;
            loading.add(
                    rankThreads[r].submit(
                            () ->
                                    new CpuRankRuntime(
                                            model, weights, placement, g.communicator(rank))));
        }
        for (int r = 0; r < worldSize; r++) {
            workers[r] = await(loading.get(r));
        }
    }

    private static Placement contiguous(ModelConfig model, int worldSize) {
        if (worldSize <= 0) {
            throw new IllegalArgumentException("worldSize: " + worldSize + " (expected: > 0)");
        }
        return Placement.contiguous(model.experts(), worldSize);
    }

    @Override
    public Transport transport() {
        return Transports.require(TransportReach.THREADS).transport();
    }

    @Override
    public ModelConfig model() {
        return model;
    }

    /** Every rank: in-process ranks are never lost. */
    @Override
    public void recordRouting() {
        for (CpuRankRuntime worker : workers) {
            worker.recordRouting();
        }
    }

    @Override
    public int[] servingRanks() {
        return IntStream.range(0, workers.length).toArray();
    }

    @Override
    public int degradedRanks() {
        return 0;
    }

    @Override
    public LayerPlacements placements() {
        return placements;
    }

    /** {@inheritDoc} Ranks are staged one after another on one loader thread. */
    @Override
    public CompletableFuture<Long> stage(int layer, Placement next) {
        return CompletableFuture.supplyAsync(
                () -> {
                    LayerSlots[] slots = new LayerSlots[workers.length];
                    long bytes = 0;
                    for (int r = 0; r < workers.length; r++) {
                        slots[r] = workers[r].stage(layer, next);
                        bytes += slots[r].loadedBytes();
                    }
                    staged.put(layer, slots);
                    return bytes;
                },
                loader);
    }

    /**
     * {@inheritDoc} Each rank thread installs its slots after the steps already queued on it and
     * before any later one, so all ranks switch at the same step.
     */
    @Override
    public void activate(int layer, Placement next) {
        LayerSlots[] slots = staged.remove(layer);
        if (slots == null || slots[0].placement() != next) {
            throw new IllegalStateException(
                    "layer " + layer + ": placement version " + next.version() + " was not staged");
        }
        for (int r = 0; r < workers.length; r++) {
            final int rank = r;
            rankThreads[r].execute(() -> workers[rank].install(slots[rank]));
        }
        placements.set(layer, next);
    }

    @Override
    public int worldSize() {
        return workers.length;
    }

    @Override
    public int joined() {
        return workers.length;
    }

    /** All ranks: a broken in-process group is replaced before the next step. */
    @Override
    public int healthy() {
        return workers.length;
    }

    /**
     * Times the in-process group was replaced after a failed step. Read by metrics from any thread.
     */
    @Override
    public int rebuilds() {
        return rebuilds;
    }

    /** {@inheritDoc} A group broken by a failed step is replaced before the next step starts. */
    @Override
    public CompletableFuture<RankStepResult[]> submit(
            int layer,
            DType dtype,
            ByteBuffer[] tokens,
            int[] counts,
            RoutingInput[] routing,
            int[] capacities,
            int lowLatencyTokens) {
        final int outBytes = model.hidden() * dtype.sizeBytes();
        List<CompletableFuture<RankStepResult>> parts =
                onEachRank(
                        (g, rank) -> {
                            try {
                                RankStepResult result =
                                        workers[rank].step(
                                                layer,
                                                dtype,
                                                tokens[rank],
                                                counts[rank],
                                                routing[rank],
                                                capacities[rank],
                                                lowLatencyTokens);
                                return withOwnOutput(result, counts[rank] * outBytes);
                            } catch (RuntimeException | Error e) {
                                g.communicator(rank).abort(e);
                                throw e;
                            }
                        });
        return RankResults.all(parts, layer);
    }

    /**
     * {@inheritDoc} A group broken by a failed step is replaced first; a failing rank aborts the
     * group, so that its peers fail too instead of waiting.
     */
    @Override
    public CompletableFuture<List<byte[]>> onEveryRank(RankTask task) {
        return all(
                onEachRank(
                        (g, rank) ->
                                RankTaskHandlers.installed()
                                        .run(
                                                task,
                                                new FlatRankContext(
                                                        rank,
                                                        workers.length,
                                                        g.communicator(rank)))));
    }

    /** What a rank runs on its thread, with the group of this run. */
    @FunctionalInterface
    private interface RankWork<T> {
        T run(LocalGroup group, int rank);
    }

    /** Runs {@code work} for every rank on its rank thread, a broken group replaced first. */
    private <T> List<CompletableFuture<T>> onEachRank(RankWork<T> work) {
        if (group.isBroken()) {
            rebuild();
        }
        final LocalGroup g = group;
        List<CompletableFuture<T>> parts = new ArrayList<>(workers.length);
        for (int r = 0; r < workers.length; r++) {
            final int rank = r;
            parts.add(CompletableFuture.supplyAsync(() -> work.run(g, rank), rankThreads[r]));
        }
        return parts;
    }

    private static <T> CompletableFuture<List<T>> all(List<CompletableFuture<T>> parts) {
        return CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]))
                .thenApply(ignored -> parts.stream().map(CompletableFuture::join).toList());
    }

    /**
     * The result with its output copied out of the rank's reused buffer, so later steps cannot
     * overwrite it.
     */
    private static RankStepResult withOwnOutput(RankStepResult r, int bytes) {
        ByteBuffer own = ByteBuffer.allocate(bytes).order(ByteOrder.LITTLE_ENDIAN);
        own.put(0, r.output(), 0, bytes);
        return new RankStepResult(
                own,
                r.tokensPerRank(),
                r.pairsPerRank(),
                r.tokensPerExpert(),
                r.droppedPerExpert(),
                r.recvTokens(),
                r.bytesSent(),
                r.bytesReceived(),
                r.routeNs(),
                r.dispatchNs(),
                r.expertNs(),
                r.combineNs(),
                r.routedIds());
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
        loader.shutdownNow();
        for (CpuRankRuntime w : workers) {
            w.close();
        }
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
