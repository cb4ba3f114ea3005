package moe.a2a.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import moe.a2a.bench.BenchPlacement;
import moe.a2a.bench.BenchReport;
import moe.a2a.bench.BenchWorkloads;
import moe.a2a.bench.MachineLimits;
import moe.a2a.bench.RankTimes;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.DispatchMode;
import moe.a2a.dispatch.Placement;
import moe.a2a.dispatch.RoutingCost;
import moe.a2a.kernels.RowKernels;
import moe.a2a.protocol.RoutingTrace;
import moe.a2a.workload.BenchRouting;
import moe.a2a.workload.BenchWorkload;

/**
 * {@code bench} on the workloads here: measures this machine's limits, runs every workload on every
 * transport ({@link WorkloadRanks}), prints the table ({@link WorkloadTable}) and writes the JSON
 * and charts asked for.
 */
final class WorkloadBenchRun {
    private WorkloadBenchRun() {}

    /** Runs what {@code options} ask for; the exit code (1 when a run did not validate). */
    static int run(BenchOptions options, DispatchDType dispatchDType, DispatchMode mode)
            throws Exception {
        List<BenchWorkload> workloads = workloads(options);
        List<Placement> placements = new ArrayList<>();
        for (BenchWorkload w : workloads) {
            placements.add(BenchPlacement.of(w, options.redundantExperts));
        }
        int cores = Runtime.getRuntime().availableProcessors();
        double memcpy = MachineLimits.memcpyGbps(cores, 5, 256 << 20);
        System.out.printf(
                Locale.ROOT,
                "memcpy: %.2f GB/s (%d threads, 256 MiB off-heap buffers); kernels: %s%n",
                memcpy,
                cores,
                RowKernels.implementation());
        double loopback = 0;
        if (options.transports.stream()
                .anyMatch(t -> Transports.reach(t) == TransportReach.NETWORK)) {
            loopback = MachineLimits.loopbackTcpGbps(4L << 30);
            System.out.printf(Locale.ROOT, "loopback TCP, one socket pair: %.2f GB/s%n", loopback);
        }
        WorkloadTable.printHeader(options.scope);
        WorkloadRanks ranks =
                new WorkloadRanks(
                        options.scope,
                        dispatchDType,
                        mode,
                        options.redundantExperts,
                        options.expertFfn);
        int done = 0;
        int runs = workloads.size() * options.transports.size();
        List<String> reports = new ArrayList<>();
        List<BenchReport> results = new ArrayList<>();
        boolean allOk = true;
        for (int wi = 0; wi < workloads.size(); wi++) {
            BenchWorkload w = workloads.get(wi);
            RoutingCost cost = BenchRouting.cost(w, placements.get(wi));
            for (Transport transport : options.transports) {
                TerminalProgress.show(done, runs, w.name() + " " + transport);
                int runWarmup = options.warmup >= 0 ? options.warmup : w.defaultWarmup();
                int runIters = options.iters > 0 ? options.iters : w.defaultIters();
                List<RankTimes> times = ranks.run(w, transport, runWarmup, runIters);
                done++;
                TerminalProgress.clear();
                BenchReport r =
                        BenchReport.of(
                                w,
                                transport,
                                options.scope,
                                cost,
                                BenchPlacement.label(options.redundantExperts),
                                times,
                                memcpy,
                                dispatchDType,
                                mode);
                allOk &= r.ok();
                WorkloadTable.printRow(
                        w, transport, r, loopback, options.expertFfn, options.redundantExperts);
                reports.add(r.json(memcpy, options.redundantExperts));
                results.add(r);
            }
        }
        if (options.json != null) {
            Files.writeString(options.json, "[\n" + String.join(",\n", reports) + "\n]\n");
        }
        if (options.plots != null) {
            BenchPlots.write(options.plots, results);
            System.out.println("charts written to " + options.plots);
        }
        return allOk ? 0 : 1;
    }

    /** The canonical workloads asked for, or the layer of the routing trace. */
    private static List<BenchWorkload> workloads(BenchOptions options) throws IOException {
        if (options.routingTrace != null) {
            int layer = options.traceLayer;
            if (layer < 0) {
                layer = RoutingTrace.read(options.routingTrace).layers()[0];
            }
            return List.of(
                    BenchWorkloads.resolve(BenchWorkloads.traceName(options.routingTrace, layer)));
        }
        List<BenchWorkload> canonical =
                options.workload.equals("all")
                        ? BenchWorkload.CANONICAL
                        : List.of(BenchWorkload.named(options.workload));
        return options.tokens > 0
                ? canonical.stream().map(w -> w.withTokens(options.tokens)).toList()
                : canonical;
    }
}
