package moe.a2a.worker;

import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.LayerSlots;
import moe.a2a.protocol.PlacementCodec;
import moe.a2a.v1.ActivatePlacement;
import moe.a2a.v1.PlacementStaged;
import moe.a2a.v1.StagePlacement;
import moe.a2a.v1.WorkerMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moves a layer to a new placement in two steps: stage loads the coming placement's weights on a
 * loader thread, so that steps go on meanwhile; activate switches the layer to them. Called on the
 * worker's data-plane thread; the loader thread it owns fills the staged slots, which the
 * data-plane thread takes on activate.
 */
final class PlacementStaging implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PlacementStaging.class);

    private final RankAssignment assignment;

    /** Loads staged placements' weights, apart from the data-plane thread. */
    private final ExecutorService loader =
            Executors.newSingleThreadExecutor(
                    r -> {
                        Thread t = new Thread(r, "moe-a2a-placement-loader");
                        t.setDaemon(true);
                        return t;
                    });

    /** Per layer, the slots staged for its next placement. */
    private final Map<Integer, LayerSlots> staged = new ConcurrentHashMap<>();

    PlacementStaging(RankAssignment assignment) {
        this.assignment = assignment;
    }

    /**
     * Loads a coming placement's weights on the loader thread, so that steps go on meanwhile, and
     * answers when done.
     */
    void stage(StagePlacement stage, SessionSender sender) {
        final LoadedRank rank = assignment.loaded();
        loader.execute(
                () -> {
                    PlacementStaged.Builder answer =
                            PlacementStaged.newBuilder().setStageId(stage.getStageId());
                    try {
                        Placement next =
                                PlacementCodec.decode(
                                        stage.getPlacement(),
                                        rank.model().experts(),
                                        assignment.worldSize());
                        LayerSlots slots = rank.runtime().stage(stage.getLayer(), next);
                        staged.put(stage.getLayer(), slots);
                        answer.setLoadedBytes(slots.loadedBytes());
                    } catch (RuntimeException e) {
                        LOG.warn("cannot stage layer {}: {}", stage.getLayer(), e.toString());
                        answer.setError(String.valueOf(e.getMessage()));
                    }
                    sender.send(WorkerMessage.newBuilder().setStaged(answer).build());
                });
    }

    /** Switches a layer to its new placement, loading it now if it was not staged. */
    void activate(ActivatePlacement activate) {
        LoadedRank loaded = assignment.loaded();
        int layer = activate.getLayer();
        Placement next =
                PlacementCodec.decode(
                        activate.getPlacement(), loaded.model().experts(), assignment.worldSize());
        LayerSlots slots = staged.remove(layer);
        if (slots == null || slots.placement().version() != next.version()) {
            slots = loaded.runtime().stage(layer, next);
        }
        loaded.runtime().install(slots);
        LOG.info(
                "layer {}: placement version {} in use, experts {}",
                layer,
                next.version(),
                Arrays.toString(next.expertsOf(assignment.rank())));
    }

    /** Forgets what was staged: a new assignment makes it stale. */
    void clear() {
        staged.clear();
    }

    /** Stops loading at once. */
    @Override
    public void close() {
        loader.shutdownNow();
    }
}
