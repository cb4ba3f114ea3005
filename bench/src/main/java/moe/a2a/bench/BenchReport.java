package moe.a2a.bench;

import com.google.gson.Gson;
import com.google.gson.JsonObject;
import java.util.List;
import java.util.Locale;
import moe.a2a.comm.Transport;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.DispatchMode;
import moe.a2a.dispatch.Placement;
import moe.a2a.dispatch.RoutingCost;
import moe.a2a.workload.BenchRouting;
import moe.a2a.workload.BenchWorkload;

/**
 * One workload × transport row of the benchmark report: per iteration the slowest rank's time, then
 * medians and p90 over iterations; bandwidths in GB/s (1e9 B/s) over bytes sent to other ranks.
 * Immutable.
 */
public record BenchReport(
        BenchWorkload workload,
        Transport transport,
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
        DispatchDType dispatchDType,
        boolean ok,
        double expertP50Us,
        double communicationShare,
        RoutingCost cost,
        String placement,
        DispatchMode mode,
        double dispatchP99Us,
        double combineP99Us) {
    private static final Gson GSON = new Gson();

    /** A report of bf16 dispatch under the contiguous placement. */
    public static BenchReport of(
            BenchWorkload w,
            Transport transport,
            BenchScope scope,
            List<RankTimes> ranks,
            double memcpyGbps) {
        final RoutingCost cost =
                BenchRouting.cost(w, Placement.contiguous(w.experts(), w.worldSize()));
        return of(
                w,
                transport,
                scope,
                cost,
                BenchPlacement.CONTIGUOUS,
                ranks,
                memcpyGbps,
                DispatchDType.BF16);
    }

    /**
     * The report of one run. {@code cost} is the traffic as placed (bytes per rank, copy bound, and
     * the per-rank counts), under the placement that {@code placement} names; the fingerprint is
     * always the workload's own, of its contiguous placement, so that it names the routing. {@code
     * bytes_per_rank} keeps the shared definition (bf16 rows) for every dispatch dtype, so that
     * rows compare with the peers'. With an expert stage ({@link ExpertStage}) the communication
     * share is the exchanges' time over the step's, from the p50s of each iteration's slowest rank:
     * {@code (dispatch + combine) / (dispatch + experts + combine)}.
     */
    public static BenchReport of(
            BenchWorkload w,
            Transport transport,
            BenchScope scope,
            RoutingCost cost,
            String placement,
            List<RankTimes> ranks,
            double memcpyGbps,
            DispatchDType dispatchDType) {
        return of(
                w,
                transport,
                scope,
                cost,
                placement,
                ranks,
                memcpyGbps,
                dispatchDType,
                DispatchMode.NORMAL);
    }

    /** As above, for a run exchanged in {@code mode}. */
    public static BenchReport of(
            BenchWorkload w,
            Transport transport,
            BenchScope scope,
            RoutingCost cost,
            String placement,
            List<RankTimes> ranks,
            double memcpyGbps,
            DispatchDType dispatchDType,
            DispatchMode mode) {
        int iters = ranks.get(0).dispatchNs().length;
        long[] dispatch = new long[iters];
        long[] combine = new long[iters];
        long[] total = new long[iters];
        long[] barrier = new long[ranks.get(0).barrierNs().length];
        long[] experts = new long[ranks.get(0).expertNs().length];
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
            for (int i = 0; i < experts.length; i++) {
                experts[i] = Math.max(experts[i], r.expertNs()[i]);
            }
        }
        long offRank = cost.rowsRemoteTotal() * w.rowBytes();
        long bytesPerRank = offRank / cost.worldSize();
        double totalP50 = percentileUs(total, 50);
        double expertP50 = experts.length == 0 ? Double.NaN : percentileUs(experts, 50);
        double exchanges = percentileUs(dispatch, 50) + percentileUs(combine, 50);
        double algbw = 2.0 * bytesPerRank / (totalP50 * 1e-6) / 1e9;
        double copyBoundUs = 2.0 * offRank / (memcpyGbps * 1e9) * 1e6;
        return new BenchReport(
                w,
                transport,
                scope,
                BenchRouting.fingerprint(BenchRouting.rows(w)),
                bytesPerRank,
                percentileUs(dispatch, 50),
                percentileUs(dispatch, 90),
                percentileUs(combine, 50),
                percentileUs(combine, 90),
                totalP50,
                percentileUs(total, 90),
                algbw,
                algbw * cost.worldSize(),
                copyBoundUs,
                percentileUs(barrier, 50),
                dispatchDType,
                ok,
                expertP50,
                exchanges / (exchanges + expertP50),
                cost,
                placement,
                mode,
                percentileUs(dispatch, 99),
                percentileUs(combine, 99));
    }

    /**
     * Bytes a rank's fixed regions hold for the other ranks in one direction, in the shared rows
     * (bf16): what tcp moves in low-latency mode, which sends every region whole; in-process only
     * the rows sent move, and over shm dispatch writes only the rows sent while combine copies
     * whole regions. 0 in normal mode.
     */
    public long regionBytesPerRank() {
        BenchWorkload w = workload;
        return mode == DispatchMode.LOW_LATENCY
                ? (long) (w.worldSize() - 1) * (w.tokens() + 1) * w.rowBytes()
                : 0;
    }

    /** Whether the run timed an expert stage, so that it has a communication share. */
    public boolean hasExperts() {
        return !Double.isNaN(expertP50Us);
    }

    /**
     * Per-step overhead (total minus the copy bound) in empty barrier rounds of the same transport.
     */
    public double overheadOverBarrier() {
        return (totalP50Us - copyBoundUs) / Math.max(1e-3, barrierP50Us);
    }

    /**
     * The report object of the shared benchmark format, plus the barrier floor, the scope and the
     * dispatch dtype. Times in whole microseconds, as the format's peers write them.
     */
    public String json(double memcpyGbps) {
        return json(memcpyGbps, 0);
    }

    /** As {@link #json(double)}, for a run with {@code redundantExperts} extra expert slots. */
    public String json(double memcpyGbps, int redundantExperts) {
        BenchWorkload w = workload;
        JsonObject o = new JsonObject();
        o.addProperty("workload", w.name());
        o.addProperty("transport", transport.label());
        o.addProperty("N", w.worldSize());
        o.addProperty("T", w.tokens());
        o.addProperty("H", w.hidden());
        o.addProperty("K", w.topK());
        o.addProperty("E", w.experts());
        o.addProperty("routing", w.routing());
        o.addProperty("fingerprint", fingerprint);
        o.addProperty("bytes_per_rank", bytesPerRank);
        o.addProperty("dispatch_us_p50", Math.round(dispatchP50Us));
        o.addProperty("dispatch_us_p90", Math.round(dispatchP90Us));
        o.addProperty("combine_us_p50", Math.round(combineP50Us));
        o.addProperty("combine_us_p90", Math.round(combineP90Us));
        o.addProperty("total_us_p50", Math.round(totalP50Us));
        o.addProperty("total_us_p90", Math.round(totalP90Us));
        o.addProperty("algbw_gbps", round3(algbwGbps));
        o.addProperty("agg_gbps", round3(aggGbps));
        o.addProperty("memcpy_gbps", round3(memcpyGbps));
        o.addProperty("copy_bound_us", Math.round(copyBoundUs));
        o.addProperty("barrier_us_p50", Math.round(barrierP50Us));
        o.addProperty("overhead_over_barrier", Math.round(overheadOverBarrier() * 100) / 100.0);
        o.addProperty("dispatch_dtype", dispatchDType.label());
        o.addProperty("mode", mode.label());
        o.addProperty("dispatch_us_p99", Math.round(dispatchP99Us));
        o.addProperty("combine_us_p99", Math.round(combineP99Us));
        if (mode == DispatchMode.LOW_LATENCY) {
            o.addProperty("region_bytes_per_rank", regionBytesPerRank());
        }
        o.addProperty("redundant_experts", redundantExperts);
        o.addProperty("placement", placement);
        o.addProperty("pairs_max_over_mean", round3(cost.pairsMaxOverMean()));
        o.addProperty("rows_total", cost.rowsTotal());
        o.addProperty("rows_recv_max", cost.rowsRecvMax());
        o.addProperty("rows_recv_max_over_mean", round3(cost.rowsRecvMaxOverMean()));
        o.addProperty("rows_remote_total", cost.rowsRemoteTotal());
        o.addProperty("ok", ok);
        if (hasExperts()) {
            o.addProperty("expert_us_p50", Math.round(expertP50Us));
            o.addProperty("communication_share", round3(communicationShare));
        }
        o.addProperty("scope", scope.name().toLowerCase(Locale.ROOT));
        return GSON.toJson(o);
    }

    private static double round3(double v) {
        return Math.round(v * 1000) / 1000.0;
    }

    /** The {@code p}-th percentile (nearest rank) of {@code ns}, in microseconds. */
    public static double percentileUs(long[] ns, double p) {
        long[] sorted = ns.clone();
        java.util.Arrays.sort(sorted);
        int index = (int) Math.min(sorted.length - 1, Math.ceil(p / 100.0 * sorted.length) - 1);
        return sorted[Math.max(0, index)] / 1000.0;
    }
}
