package moe.a2a.metrics;

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

    /** As {@link #maxOverMean(long[])}, for loads that are not counts. */
    public static double maxOverMean(double[] loads) {
        double max = 0;
        double sum = 0;
        for (double l : loads) {
            max = Math.max(max, l);
            sum += l;
        }
        return sum == 0 ? 0 : max * loads.length / sum;
    }
}
