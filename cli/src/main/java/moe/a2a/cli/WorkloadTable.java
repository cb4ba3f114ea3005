package moe.a2a.cli;

import java.util.Locale;
import moe.a2a.bench.BenchReport;
import moe.a2a.bench.BenchScope;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import moe.a2a.dispatch.DispatchMode;
import moe.a2a.metrics.Imbalance;
import moe.a2a.workload.BenchRouting;
import moe.a2a.workload.BenchWorkload;

/**
 * The table {@code bench} prints for the workloads: what the scope times, the column header, then
 * one row per workload and transport with its notes (the loopback share over tcp, the experts'
 * share, the planned placement's balance).
 */
final class WorkloadTable {
    private WorkloadTable() {}

    /** What {@code scope} times, then the column header. */
    static void printHeader(BenchScope scope) {
        System.out.println(
                scope == BenchScope.TRANSPORT
                        ? "scope: transport exchanges only (counts + rows out, rows back); pack, unpack and reduction are not timed"
                        : "scope: dispatcher (dispatch = layout + pack + counts + rows + grouping; combine = rows back + fp32 sum)");
        System.out.printf(
                Locale.ROOT,
                "%-18s %-9s %2s %5s %-16s %12s %10s %10s %10s %10s %8s %8s %10s %6s %9s %4s%n",
                "workload",
                "transport",
                "N",
                "T",
                "fingerprint",
                "bytes/rank",
                "disp p50",
                "comb p50",
                "total p50",
                "total p90",
                "algbw",
                "agg",
                "copybound",
                "xbound",
                "barrier",
                "ok");
    }

    /**
     * One run's row and notes: {@code loopback} is the socket pair's rate (tcp); the report's
     * routing cost is the workload's traffic under its placement.
     */
    static void printRow(
            BenchWorkload w,
            Transport transport,
            BenchReport r,
            double loopback,
            int expertFfn,
            int redundantExperts) {
        System.out.printf(
                Locale.ROOT,
                "%-18s %-9s %2d %5d %-16s %12d %8.0fus %8.0fus %8.0fus %8.0fus %6.2fG %6.2fG %8.0fus %5.2fx %7.0fus %4s%n",
                w.name(),
                r.transport(),
                w.worldSize(),
                w.tokens(),
                r.fingerprint(),
                r.bytesPerRank(),
                r.dispatchP50Us(),
                r.combineP50Us(),
                r.totalP50Us(),
                r.totalP90Us(),
                r.algbwGbps(),
                r.aggGbps(),
                r.copyBoundUs(),
                r.totalP50Us() / r.copyBoundUs(),
                r.barrierP50Us(),
                r.ok() ? "ok" : "FAIL");
        if (Transports.reach(transport) == TransportReach.NETWORK) {
            System.out.printf(
                    Locale.ROOT,
                    "  aggregate rate during the exchanges: %.0f%% of the loopback socket pair%n",
                    100 * r.aggGbps() / loopback);
        }
        System.out.printf(
                Locale.ROOT,
                "  %s: dispatch p50/p99 %.0f/%.0fus, combine p50/p99 %.0f/%.0fus%s%n",
                r.mode().label(),
                r.dispatchP50Us(),
                r.dispatchP99Us(),
                r.combineP50Us(),
                r.combineP99Us(),
                r.mode() == DispatchMode.LOW_LATENCY
                        ? String.format(
                                Locale.ROOT,
                                "; fixed regions of %d rows a source: %d bytes/rank each way"
                                        + " over tcp (whole regions), in combine over shm; the"
                                        + " rows sent otherwise",
                                w.tokens() + 1,
                                r.regionBytesPerRank())
                        : "");
        if (r.hasExperts()) {
            System.out.printf(
                    Locale.ROOT,
                    "  experts (I = %d) p50 %.0fus: communication share %.3f%n",
                    expertFfn,
                    r.expertP50Us(),
                    r.communicationShare());
        }
        if (redundantExperts != 0) {
            System.out.printf(
                    Locale.ROOT,
                    "  placement: %d redundant slots planned for the workload's loads; tokens per rank max/mean %.3f (contiguous: %.3f)%n",
                    redundantExperts,
                    r.cost().rowsRecvMaxOverMean(),
                    Imbalance.maxOverMean(tokensPerRank(BenchRouting.rows(w))));
        }
    }

    /** Tokens each rank receives: the column sums of {@code rows[src][dst]}. */
    private static long[] tokensPerRank(int[][] rows) {
        long[] in = new long[rows.length];
        for (int[] src : rows) {
            for (int d = 0; d < src.length; d++) {
                in[d] += src[d];
            }
        }
        return in;
    }
}
