package moe.a2a.metrics;

/** Told when a layer switches to a new expert placement; used by metrics. Scheduler thread. */
public interface PlacementListener {
    /**
     * @param loadedBytes expert weight bytes the ranks loaded for it, over all ranks
     */
    void onRebalance(int layer, long version, long loadedBytes);
}
