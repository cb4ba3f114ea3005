package moe.a2a.metrics;

/**
 * The share of a layer's step time spent exchanging (dispatch and combine all-to-alls over the
 * whole step: route, dispatch, expert, combine), summed over its last {@code steps} steps, so one
 * slow step does not swing it. Not thread-safe: one recording thread.
 */
final class ShareWindow {
    private final long[] exchangeNs;
    private final long[] stepNs;
    private long exchangeSum;
    private long stepSum;
    private int next;

    ShareWindow(int steps) {
        this.exchangeNs = new long[steps];
        this.stepNs = new long[steps];
    }

    /** Adds a step and returns the share over the window: 0 before any step took time. */
    double add(long exchange, long step) {
        exchangeSum += exchange - exchangeNs[next];
        stepSum += step - stepNs[next];
        exchangeNs[next] = exchange;
        stepNs[next] = step;
        next = (next + 1) % exchangeNs.length;
        return stepSum == 0 ? 0 : (double) exchangeSum / stepSum;
    }
}
