package moe.a2a.control.metrics;

/** Load imbalance as reported everywhere: max/mean of the counts, 0 when all are zero. */
public final class Imbalance {
    private Imbalance() {}

    public static double maxOverMean(long[] counts) {
        long max = 0;
        long sum = 0;
        for (long c : counts) {
            max = Math.max(max, c);
            sum += c;
        }
        return sum == 0 ? 0 : max * (double) counts.length / sum;
    }
}
