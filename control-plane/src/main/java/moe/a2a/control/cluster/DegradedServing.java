package moe.a2a.control.cluster;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import moe.a2a.dispatch.Placement;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides whether the group can serve without the ranks that lost their worker, and restores the
 * placements once it is whole again. On any transport, when every expert a lost rank hosted has a
 * replica elsewhere, each layer's placement gives the lost rank's slots share 0 so it takes no
 * tokens; the placements from before the loss come back when the group forms whole. Not
 * thread-safe: guarded by {@link RemoteCluster}'s lock.
 */
final class DegradedServing {
    /** Logs under the cluster's name, the one category operators follow. */
    private static final Logger LOG = LoggerFactory.getLogger(RemoteCluster.class);

    private final LayerPlacements placements;
    private final PlacementRollout rollout;
    private final int worldSize;

    /**
     * Each layer's placement from before ranks were lost, restored once the group is whole again;
     * null while whole.
     */
    private @Nullable List<Placement> beforeLoss;

    DegradedServing(LayerPlacements placements, PlacementRollout rollout, int worldSize) {
        this.placements = placements;
        this.rollout = rollout;
        this.worldSize = worldSize;
    }

    /** Whether the placements do without lost ranks, to be restored once the group is whole. */
    boolean degraded() {
        return beforeLoss != null;
    }

    /**
     * Whether every expert the ranks outside {@code usable} host has a replica among {@code
     * usable}, so that the group could serve without them.
     */
    boolean covers(int[] usable) {
        if (usable.length == 0) {
            return false;
        }
        boolean[] lost = outside(usable);
        for (Placement p : beforeLoss != null ? beforeLoss : placements.all()) {
            if (p.without(lost, p.version() + 1) == null) {
                return false;
            }
        }
        return true;
    }

    private boolean[] outside(int[] usable) {
        boolean[] lost = new boolean[worldSize];
        Arrays.fill(lost, true);
        for (int r : usable) {
            lost[r] = false;
        }
        return lost;
    }

    /**
     * Switches every layer to a placement without the ranks outside {@code usable} (those with no
     * worker, set aside for a cut link, or evicted as stragglers) when every expert they hosted has
     * a replica on another rank. Over NCCL the ranks left form a communicator of their own, from a
     * fresh unique id.
     *
     * @param usable the ranks that can form a group, ascending
     * @return the ranks left, to form a group of their own; null to wait for the others to be taken
     *     again, or their links to come back
     */
    int @Nullable [] degrade(String reason, int[] usable) {
        if (usable.length == 0) {
            return null;
        }
        boolean[] lost = outside(usable);
        List<Placement> whole = beforeLoss != null ? beforeLoss : placements.all();
        List<Placement> next = new ArrayList<>();
        for (int layer = 0; layer < whole.size(); layer++) {
            Placement without = whole.get(layer).without(lost, placements.get(layer).version() + 1);
            if (without == null) {
                LOG.warn(
                        "cannot serve without ranks {}: layer {} has an expert only they host;"
                                + " waiting for them",
                        missing(lost),
                        layer);
                return null;
            }
            next.add(without);
        }
        beforeLoss = whole;
        for (int layer = 0; layer < next.size(); layer++) {
            rollout.activateLocked(layer, next.get(layer));
        }
        LOG.warn(
                "degraded: serving with ranks {} of {} ({}); their replicas take the tokens of ranks {}",
                Arrays.toString(usable),
                worldSize,
                reason,
                missing(lost));
        return usable;
    }

    private static String missing(boolean[] lost) {
        return Arrays.toString(IntStream.range(0, lost.length).filter(r -> lost[r]).toArray());
    }

    /**
     * Brings back the placements from before the loss, as the next versions, once a group of {@code
     * groupSize} ranks, every rank, is ready.
     */
    void restoreIfWhole(int groupSize) {
        if (beforeLoss == null || groupSize != worldSize) {
            return;
        }
        for (int layer = 0; layer < beforeLoss.size(); layer++) {
            rollout.activateLocked(
                    layer, beforeLoss.get(layer).withVersion(placements.get(layer).version() + 1));
        }
        beforeLoss = null;
        LOG.info("whole again: every rank takes its slots' shares as before the loss");
    }
}
