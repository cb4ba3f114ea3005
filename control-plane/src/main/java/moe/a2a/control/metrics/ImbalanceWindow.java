package moe.a2a.control.metrics;

/**
 * Load imbalance over the last {@code steps} steps of one layer: max over mean of the per-expert
 * (or per-rank) token counts summed over the window, so one small step does not swing the gauge.
 * Keeps the window's sums up to date in O(counts) per step. Owned by the recording thread.
 */
final class ImbalanceWindow {
    private final long[][] ring;
    private final long[] sums;
    private int next;

    ImbalanceWindow(int steps, int width) {
        if (steps <= 0) {
            throw new IllegalArgumentException("steps: " + steps + " (expected: > 0)");
        }
        this.ring = new long[steps][width];
        this.sums = new long[width];
    }

    /**
     * Adds one step's counts (the oldest step leaves the window); returns the window's max/mean.
     */
    double add(long[] counts) {
        long[] oldest = ring[next];
        for (int i = 0; i < sums.length; i++) {
            sums[i] += counts[i] - oldest[i];
            oldest[i] = counts[i];
        }
        next = (next + 1) % ring.length;
        return Imbalance.maxOverMean(sums);
    }
}
