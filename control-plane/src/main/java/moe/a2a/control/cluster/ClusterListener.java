package moe.a2a.control.cluster;

/**
 * Told when the distributed group starts or stops serving. Called with the cluster's lock released.
 */
public interface ClusterListener {
    void onServing(long epoch, long formedInNanos);

    void onNotServing(String reason);
}
