package moe.a2a.control.cluster;

import java.util.Locale;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import moe.a2a.dispatch.Placement;
import moe.a2a.dispatch.PlacementMove;
import moe.a2a.dispatch.PlacementPlanner;
import moe.a2a.metrics.Imbalance;
import moe.a2a.metrics.ImbalanceWindow;
import moe.a2a.metrics.PlacementListener;
import moe.a2a.metrics.StepStatsSnapshot;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Live rebalancing: keeps each layer's expert loads over its last {@code every} steps, and every
 * {@code every} steps of a layer plans a placement for them ({@link PlacementPlanner}, ranks
 * matched to keep experts where they are, {@link PlacementMove}). When the plan lowers the
 * predicted max/mean rank load by at least {@link #MIN_GAIN}, every rank stages it in the
 * background while steps go on; once all have it, the scheduler switches the layer at the next step
 * boundary. Serving never waits for a move; a staging that fails, or that the cluster changed under
 * (a lost rank), leaves the layer as it was. It does not plan while the cluster serves without lost
 * ranks. At most one move per layer at a time.
 *
 * <p>{@link #onStep} and {@link #beforeStep} run on the scheduler thread; stagings complete on any
 * thread and are handed over through a queue.
 */
public final class Rebalancer {
    private static final Logger LOG = LoggerFactory.getLogger(Rebalancer.class);

    /** The relative drop in predicted max/mean rank load that is worth moving weights for. */
    public static final double MIN_GAIN = 0.05;

    private final RankGroup group;
    private final int every;
    private final PlacementListener listener;
    private final ImbalanceWindow[] windows;
    private final int[] stepsSincePlan;
    private final boolean[] moving;
    private final Queue<Staged> staged = new ConcurrentLinkedQueue<>();

    /** A staging that finished: its placement and bytes, or its failure. */
    private record Staged(
            int layer,
            Placement next,
            long loadedBytes,
            long stagedNanos,
            double predicted,
            Throwable failure) {}

    /**
     * @param every steps of a layer between plans, which is also the window of loads they use; 0
     *     never rebalances
     * @throws IllegalArgumentException naming {@code --rebalance-every} when it is negative
     */
    public Rebalancer(RankGroup group, int every, PlacementListener listener) {
        if (every < 0) {
            throw new IllegalArgumentException(
                    "--rebalance-every: " + every + " (expected: >= 0, 0 to never rebalance)");
        }
        this.group = group;
        this.every = every;
        this.listener = listener;
        int layers = group.model().layers();
        this.windows = new ImbalanceWindow[layers];
        this.stepsSincePlan = new int[layers];
        this.moving = new boolean[layers];
        for (int l = 0; l < layers; l++) {
            windows[l] = new ImbalanceWindow(Math.max(1, every), group.model().experts());
        }
    }

    /** Counts a finished step's expert loads; plans the layer when its turn has come. */
    public void onStep(StepStatsSnapshot stats) {
        if (every == 0) {
            return;
        }
        int layer = stats.layer();
        windows[layer].add(stats.tokensPerExpert());
        if (++stepsSincePlan[layer] >= every && !moving[layer] && group.degradedRanks() == 0) {
            stepsSincePlan[layer] = 0;
            plan(layer);
        }
    }

    /** Switches the layers whose staging completed; call before submitting a step. */
    public void beforeStep() {
        for (Staged s = staged.poll(); s != null; s = staged.poll()) {
            moving[s.layer()] = false;
            if (s.failure() == null
                    && (group.degradedRanks() > 0
                            || group.placements().get(s.layer()).version()
                                    != s.next().version() - 1)) {
                LOG.info(
                        "layer {}: placement version {} dropped: the cluster changed while it was staged",
                        s.layer(),
                        s.next().version());
                continue;
            }
            if (s.failure() != null) {
                LOG.warn(
                        "layer {}: placement version {} not switched to: {}",
                        s.layer(),
                        s.next().version(),
                        s.failure().toString());
                continue;
            }
            group.activate(s.layer(), s.next());
            stepsSincePlan[s.layer()] = 0;
            listener.onRebalance(s.layer(), s.next().version(), s.loadedBytes());
            LOG.info(
                    "layer {}: placement version {} in use (predicted rank max/mean {}), {} KiB of expert weights loaded in {} ms",
                    s.layer(),
                    s.next().version(),
                    String.format(Locale.ROOT, "%.3f", s.predicted()),
                    s.loadedBytes() / 1024,
                    TimeUnit.NANOSECONDS.toMillis(s.stagedNanos()));
        }
    }

    private void plan(int layer) {
        double[] loads = windows[layer].loads();
        Placement current = group.placements().get(layer);
        double before = Imbalance.maxOverMean(current.rankLoads(loads));
        if (before == 0) {
            return;
        }
        Placement planned =
                PlacementPlanner.plan(loads, current.worldSize(), current.slots(), 1, 1)
                        .placement(
                                current.version() + 1, current.numExperts(), current.worldSize());
        Placement next = PlacementMove.aligned(current, planned, current.version() + 1);
        double after = Imbalance.maxOverMean(next.rankLoads(loads));
        if (after > before * (1 - MIN_GAIN)) {
            return;
        }
        moving[layer] = true;
        long start = System.nanoTime();
        LOG.info(
                "layer {}: staging placement version {} (predicted rank max/mean {} -> {})",
                layer,
                next.version(),
                String.format(Locale.ROOT, "%.3f", before),
                String.format(Locale.ROOT, "%.3f", after));
        group.stage(layer, next)
                .whenComplete(
                        (bytes, failure) ->
                                staged.add(
                                        new Staged(
                                                layer,
                                                next,
                                                failure == null ? bytes : 0,
                                                System.nanoTime() - start,
                                                after,
                                                failure)));
    }
}
