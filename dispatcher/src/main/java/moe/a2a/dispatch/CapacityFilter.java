package moe.a2a.dispatch;

import java.util.Arrays;

/**
 * Expert capacity on one rank's share of a step: each expert keeps at most {@code capacity} of the
 * rank's (token, expert) pairs, those with the highest weights (ties: the earlier token); the rest
 * are dropped, their id replaced by {@link #DROPPED}. A token's other weights are not renormalised:
 * its output is the weighted sum over the experts it kept (zero if it kept none). Arrays grow to
 * the largest step seen and are reused. Owned by the rank thread.
 */
public final class CapacityFilter {
    /** The id of a dropped pair: {@link DispatchLayout} sends it nowhere. */
    public static final int DROPPED = -1;

    /** No limit: every pair is kept. */
    public static final int UNLIMITED = Integer.MAX_VALUE;

    private final long[] dropped;
    private final int[] count;
    private final int[] start;
    private int[] kept = new int[0];
    private int[] byExpert = new int[0];
    private Integer[] order = new Integer[0];

    public CapacityFilter(int experts) {
        this.dropped = new long[experts];
        this.count = new int[experts];
        this.start = new int[experts + 1];
    }

    /**
     * The ids of {@code numTokens × topK} pairs with those beyond {@code capacity} per expert
     * replaced by {@link #DROPPED}; {@code ids} itself is left alone. The returned array is reused
     * by the next call.
     */
    public int[] apply(int[] ids, float[] weights, int numTokens, int topK, int capacity) {
        final int pairs = numTokens * topK;
        if (kept.length < pairs) {
            kept = new int[pairs];
            byExpert = new int[pairs];
        }
        System.arraycopy(ids, 0, kept, 0, pairs);
        Arrays.fill(dropped, 0);
        if (capacity == UNLIMITED) {
            return kept;
        }
        Arrays.fill(count, 0);
        for (int i = 0; i < pairs; i++) {
            count[ids[i]]++;
        }
        start[0] = 0;
        for (int e = 0; e < count.length; e++) {
            start[e + 1] = start[e] + count[e];
        }
        int[] cursor = Arrays.copyOf(start, count.length);
        for (int i = 0; i < pairs; i++) {
            byExpert[cursor[ids[i]]++] = i;
        }
        for (int e = 0; e < count.length; e++) {
            if (count[e] > capacity) {
                dropBeyond(e, weights, capacity);
            }
        }
        return kept;
    }

    /**
     * Each expert's capacity in a step of {@code tokens} tokens: {@code ceil(factor · T · K / E)}
     * pairs, or {@link #UNLIMITED} when {@code factor} is 0 (dropless).
     */
    public static long stepCapacity(double factor, long tokens, int topK, int experts) {
        if (factor == 0) {
            return UNLIMITED;
        }
        // the epsilon keeps a product that is whole in exact arithmetic from rounding up
        return (long) Math.ceil(factor * tokens * topK / experts - 1e-9);
    }

    /**
     * The share of {@code capacity} for the step's tokens {@code [from, to)} of {@code tokens}: in
     * proportion to them, so that consecutive shares add up to {@code capacity} exactly.
     */
    public static int share(long capacity, long from, long to, long tokens) {
        if (capacity == UNLIMITED) {
            return UNLIMITED;
        }
        return tokens == 0 ? 0 : (int) (capacity * to / tokens - capacity * from / tokens);
    }

    /** Pairs dropped per logical expert by the last {@link #apply} (a copy). */
    public long[] droppedPerExpert() {
        return dropped.clone();
    }

    private void dropBeyond(int expert, float[] weights, int capacity) {
        final int n = count[expert];
        if (order.length < n) {
            order = new Integer[n];
        }
        for (int j = 0; j < n; j++) {
            order[j] = byExpert[start[expert] + j];
        }
        // highest weight first; pairs are in token order, so ties keep the earlier token
        Arrays.sort(order, 0, n, (a, b) -> Float.compare(weights[b], weights[a]));
        for (int j = capacity; j < n; j++) {
            kept[order[j]] = DROPPED;
        }
        dropped[expert] = n - capacity;
    }
}
