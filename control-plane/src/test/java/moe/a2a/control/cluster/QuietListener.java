package moe.a2a.control.cluster;

/** A {@link ClusterListener} for tests that watch the cluster itself instead. */
public final class QuietListener implements ClusterListener {
    @Override
    public void onServing(long epoch, long formedInNanos) {}

    @Override
    public void onNotServing(String reason) {}
}
