package moe.a2a.metrics;

/**
 * Load over the last {@code steps} steps of one layer: the per-expert (or per-rank) token counts
 * summed over the window, and their max over mean, so one small step does not swing the gauge or
 * the rebalancer. Keeps the window's sums up to date in O(counts) per step. Owned by the recording
 * thread.
 */
public final class ImbalanceWindow {
    private final long[][] ring;
    private final long[] sums;
    private int next;

    public ImbalanceWindow(int steps, int width) {
        if (steps <= 0) {
            throw new IllegalArgumentException("steps: " + steps + " (expected: > 0)");
        }
        this.ring = new long[steps][width];
        this.sums = new long[width];
    }

    /**
     * Adds one step's counts (the oldest step leaves the window); returns the window's max/mean.
     */
    public double add(long[] counts) {
        long[] oldest = ring[next];
        for (int i = 0; i < sums.length; i++) {
            sums[i] += counts[i] - oldest[i];
            oldest[i] = counts[i];
        }
        next = (next + 1) % ring.length;
        return Imbalance.maxOverMean(sums);
    }

    /** The window's summed counts. */
    public double[] loads() {
        double[] out = new double[sums.length];
        for (int i = 0; i < sums.length; i++) {
            out[i] = sums[i];
        }
        return out;
    }
}
