package moe.a2a.control.cluster;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** A {@link ClusterListener} for tests that check why the cluster stopped serving, in order. */
public final class NotServingReasons implements ClusterListener {
    private final List<String> reasons = new CopyOnWriteArrayList<>();

    @Override
    public void onServing(long epoch, long formedInNanos) {}

    @Override
    public void onNotServing(String reason) {
        reasons.add(reason);
    }

    /** Every reason so far, oldest first. */
    public List<String> reasons() {
        return List.copyOf(reasons);
    }
}
