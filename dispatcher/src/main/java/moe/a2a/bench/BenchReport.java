package moe.a2a.bench;

import java.util.List;
import java.util.Locale;

/**
 * One workload × transport row of the benchmark report: per iteration the slowest rank's time, then
 * medians and p90 over iterations; bandwidths in GB/s (1e9 B/s) over bytes sent to other ranks.
 * Immutable.
 */
public record BenchReport(
        BenchWorkload workload,
        String transport,
        BenchScope scope,
        String fingerprint,
        long bytesPerRank,
        double dispatchP50Us,
        double dispatchP90Us,
        double combineP50Us,
        double combineP90Us,
        double totalP50Us,
        double totalP90Us,
        double algbwGbps,
        double aggGbps,
        double copyBoundUs,
        double barrierP50Us,
        boolean ok) {

    public static BenchReport of(
            BenchWorkload w,
            String transport,
            BenchScope scope,
            int[][] rows,
            List<RankTimes> ranks,
            double memcpyGbps) {
        int iters = ranks.get(0).dispatchNs().length;
        long[] dispatch = new long[iters];
        long[] combine = new long[iters];
        long[] total = new long[iters];
        long[] barrier = new long[ranks.get(0).barrierNs().length];
        boolean ok = true;
        for (RankTimes r : ranks) {
            ok &= r.ok();
            for (int i = 0; i < iters; i++) {
                dispatch[i] = Math.max(dispatch[i], r.dispatchNs()[i]);
                combine[i] = Math.max(combine[i], r.combineNs()[i]);
                total[i] = Math.max(total[i], r.dispatchNs()[i] + r.combineNs()[i]);
            }
            for (int i = 0; i < barrier.length; i++) {
                barrier[i] = Math.max(barrier[i], r.barrierNs()[i]);
            }
        }
        long offRank = 0;
        for (int src = 0; src < rows.length; src++) {
            for (int dst = 0; dst < rows.length; dst++) {
                offRank += src != dst ? (long) rows[src][dst] * w.rowBytes() : 0;
            }
        }
        long bytesPerRank = offRank / rows.length;
        double totalP50 = percentileUs(total, 50);
        double algbw = 2.0 * bytesPerRank / (totalP50 * 1e-6) / 1e9;
        double copyBoundUs = 2.0 * offRank / (memcpyGbps * 1e9) * 1e6;
        return new BenchReport(
                w,
                transport,
                scope,
                BenchRouting.fingerprint(rows),
                bytesPerRank,
                percentileUs(dispatch, 50),
                percentileUs(dispatch, 90),
                percentileUs(combine, 50),
                percentileUs(combine, 90),
                totalP50,
                percentileUs(total, 90),
                algbw,
                algbw * rows.length,
                copyBoundUs,
                percentileUs(barrier, 50),
                ok);
    }

    /**
     * Per-step overhead (total minus the copy bound) in empty barrier rounds of the same transport.
     */
    public double overheadOverBarrier() {
        return (totalP50Us - copyBoundUs) / Math.max(1e-3, barrierP50Us);
    }

    /** The report object of the shared benchmark format, plus the barrier floor. */
    public String json(double memcpyGbps) {
        BenchWorkload w = workload;
        return String.format(
                Locale.ROOT,
                "{\"workload\":\"%s\",\"transport\":\"%s\",\"N\":%d,\"T\":%d,\"H\":%d,\"K\":%d,"
                        + "\"E\":%d,\"routing\":\"%s\",\"fingerprint\":\"%s\",\"bytes_per_rank\":%d,\"dispatch_us_p50\":%.0f,"
                        + "\"dispatch_us_p90\":%.0f,\"combine_us_p50\":%.0f,\"combine_us_p90\":%.0f,\"total_us_p50\":%.0f,"
                        + "\"total_us_p90\":%.0f,\"algbw_gbps\":%.3f,\"agg_gbps\":%.3f,\"memcpy_gbps\":%.3f,\"copy_bound_us\":%.0f,"
                        + "\"barrier_us_p50\":%.0f,\"overhead_over_barrier\":%.2f,\"ok\":%b,\"scope\":\"%s\"}",
                w.name(),
                transport,
                w.worldSize(),
                w.tokens(),
                w.hidden(),
                w.topK(),
                w.experts(),
                w.routing(),
                fingerprint,
                bytesPerRank,
                dispatchP50Us,
                dispatchP90Us,
                combineP50Us,
                combineP90Us,
                totalP50Us,
                totalP90Us,
                algbwGbps,
                aggGbps,
                memcpyGbps,
                copyBoundUs,
                barrierP50Us,
                overheadOverBarrier(),
                ok,
                scope.name().toLowerCase(Locale.ROOT));
    }

    /** The {@code p}-th percentile (nearest rank) of {@code ns}, in microseconds. */
    public static double percentileUs(long[] ns, double p) {
        long[] sorted = ns.clone();
        java.util.Arrays.sort(sorted);
        int index = (int) Math.min(sorted.length - 1, Math.ceil(p / 100.0 * sorted.length) - 1);
        return sorted[Math.max(0, index)] / 1000.0;
    }
}
