package moe.a2a.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import moe.a2a.bench.BenchPlacement;
import moe.a2a.bench.BenchReport;
import moe.a2a.bench.BenchRouting;
import moe.a2a.bench.BenchRun;
import moe.a2a.bench.BenchScope;
import moe.a2a.bench.BenchWorkload;
import moe.a2a.bench.MachineLimits;
import moe.a2a.bench.RankTimes;
import moe.a2a.comm.Transport;
import moe.a2a.comm.local.LocalGroup;
import moe.a2a.control.metrics.Imbalance;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.Placement;
import moe.a2a.kernels.RowKernels;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code moe-a2a bench}: the canonical workloads' exchanges on a transport, next to this machine's
 * memcpy bound (and, for tcp, a plain loopback socket pair) measured in the same run. With {@code
 * tcp} every rank is its own process.
 */
@Command(
        name = "bench",
        mixinStandardHelpOptions = true,
        description =
                "Time the canonical workloads' dispatch and combine on a transport, next to this machine's limits.")
final class BenchCommand implements Callable<Integer> {
    private static final int BAR_WIDTH = 30;

    @Option(
            names = "--workload",
            defaultValue = "prefill",
            description =
                    "decode, prefill, prefill-skew, prefill-skew-perm, prefill-n2, prefill-n8 or all (default: ${DEFAULT-VALUE}).")
    String workload;

    @Option(
            names = "--transport",
            defaultValue = "local",
            split = ",",
            completionCandidates = BenchTransports.class,
            description =
                    "${COMPLETION-CANDIDATES}, or several separated by commas (default: ${DEFAULT-VALUE}).")
    List<Transport> transports;

    /** The transports bench runs here (GPU checks: scripts/gpu-check.sh). */
    static final class BenchTransports implements Iterable<String> {
        static final List<Transport> ALL = List.of(Transport.LOCAL, Transport.TCP);

        @Override
        public Iterator<String> iterator() {
            return ALL.stream().map(Transport::label).iterator();
        }
    }

    @Option(
            names = "--scope",
            defaultValue = "DISPATCHER",
            description =
                    "DISPATCHER (layout, pack, exchanges, grouping, reduction) or TRANSPORT (the exchanges alone) (default: ${DEFAULT-VALUE}).")
    BenchScope scope;

    @Option(
            names = "--dispatch-dtype",
            defaultValue = "bf16",
            paramLabel = "bf16|fp8",
            description =
                    "How the dispatcher scope sends tokens: bf16, or fp8 (E4M3, one fp32 scale per 128"
                            + " channels; combine stays bf16). Not with --target or --scope TRANSPORT"
                            + " (default: ${DEFAULT-VALUE}).")
    String dispatchDTypeName;

    @Option(
            names = "--redundant-experts",
            defaultValue = "0",
            description =
                    "R extra expert slots, placed by the planner of moe-a2a eplb for each workload's own expert loads (replicas with shares; experts + R a multiple of the ranks); dispatcher scope, here only (default: ${DEFAULT-VALUE}).")
    int redundantExperts;

    @Option(
            names = "--iters",
            defaultValue = "-1",
            description =
                    "Measured iterations; -1 takes the peers' count per workload: decode 200, prefill-n8 15, others 40 (default: ${DEFAULT-VALUE}).")
    int iters;

    @Option(
            names = "--warmup",
            defaultValue = "-1",
            description =
                    "Iterations before measuring; -1 takes the peers' count per workload: decode 20, prefill-n8 2, others 3 (default: ${DEFAULT-VALUE}).")
    int warmup;

    @Option(
            names = "--json",
            paramLabel = "FILE",
            description = "Also write the report as a JSON array.")
    Path json;

    @Option(
            names = "--target",
            paramLabel = "HOST:PORT",
            description =
                    "Run on a live server's ranks through BenchService instead of on local or tcp ranks started here.")
    String target;

    @Mixin ChannelOptions connection;

    @Option(
            names = "--plots",
            paramLabel = "DIR",
            description =
                    "Also write PNG charts: latency per workload and phase, traffic matrices, tokens per expert.")
    Path plots;

    @Override
    public Integer call() throws Exception {
        DispatchDType dispatchDType = DispatchDType.parse("--dispatch-dtype", dispatchDTypeName);
        if (dispatchDType != DispatchDType.BF16
                && (target != null || scope == BenchScope.TRANSPORT)) {
            throw new IllegalArgumentException(
                    "--dispatch-dtype: "
                            + dispatchDType.label()
                            + " (expected: bf16 with --target or --scope TRANSPORT, which move bf16"
                            + " rows)");
        }
        for (Transport t : transports) {
            if (!BenchTransports.ALL.contains(t)) {
                throw new IllegalArgumentException(
                        "--transport: "
                                + t
                                + " (expected: "
                                + Transport.labels(Transport.LOCAL, Transport.TCP)
                                + "; the NCCL path is checked by scripts/gpu-check.sh)");
            }
        }
        if (target != null) {
            return RemoteBench.run(
                    connection,
                    target,
                    workload,
                    scope,
                    Math.max(0, iters),
                    Math.max(0, warmup),
                    json);
        }
        if (redundantExperts != 0 && (target != null || scope == BenchScope.TRANSPORT)) {
            throw new IllegalArgumentException(
                    "--redundant-experts: "
                            + redundantExperts
                            + " (expected: 0 with --target or --scope TRANSPORT)");
        }
        List<BenchWorkload> workloads =
                workload.equals("all")
                        ? BenchWorkload.CANONICAL
                        : List.of(BenchWorkload.named(workload));
        List<Placement> placements = new ArrayList<>();
        for (BenchWorkload w : workloads) {
            placements.add(BenchPlacement.of(w, redundantExperts));
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
        if (transports.contains(Transport.TCP)) {
            loopback = MachineLimits.loopbackTcpGbps(4L << 30);
            System.out.printf(Locale.ROOT, "loopback TCP, one socket pair: %.2f GB/s%n", loopback);
        }
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
        int done = 0;
        int runs = workloads.size() * transports.size();
        List<String> reports = new ArrayList<>();
        List<BenchReport> results = new ArrayList<>();
        boolean allOk = true;
        for (int wi = 0; wi < workloads.size(); wi++) {
            BenchWorkload w = workloads.get(wi);
            int[][] rows = BenchRouting.rows(w, placements.get(wi));
            for (Transport transport : transports) {
                progress(done, runs, w.name() + " " + transport);
                int runWarmup = warmup >= 0 ? warmup : w.defaultWarmup();
                int runIters = iters > 0 ? iters : w.defaultIters();
                List<RankTimes> times =
                        transport == Transport.LOCAL
                                ? runLocal(w, runWarmup, runIters, dispatchDType)
                                : runProcesses(w, runWarmup, runIters, dispatchDType);
                done++;
                clearProgress();
                BenchReport r =
                        BenchReport.of(w, transport, scope, rows, times, memcpy, dispatchDType);
                allOk &= r.ok();
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
                if (transport == Transport.TCP) {
                    System.out.printf(
                            Locale.ROOT,
                            "  aggregate rate during the exchanges: %.0f%% of the loopback socket pair%n",
                            100 * r.aggGbps() / loopback);
                }
                if (redundantExperts != 0) {
                    System.out.printf(
                            Locale.ROOT,
                            "  placement: %d redundant slots planned for the workload's loads; tokens per rank max/mean %.3f (contiguous: %.3f)%n",
                            redundantExperts,
                            Imbalance.maxOverMean(tokensPerRank(rows)),
                            Imbalance.maxOverMean(tokensPerRank(BenchRouting.rows(w))));
                }
                reports.add(r.json(memcpy, redundantExperts));
                results.add(r);
            }
        }
        if (json != null) {
            Files.writeString(json, "[\n" + String.join(",\n", reports) + "\n]\n");
        }
        if (plots != null) {
            BenchPlots.write(plots, results);
            System.out.println("charts written to " + plots);
        }
        return allOk ? 0 : 1;
    }

    private List<RankTimes> runLocal(
            BenchWorkload w, int runWarmup, int runIters, DispatchDType dispatchDType)
            throws Exception {
        LocalGroup group = new LocalGroup(w.worldSize(), TimeUnit.SECONDS.toNanos(120));
        ExecutorService pool = Executors.newFixedThreadPool(w.worldSize());
        try {
            List<Future<RankTimes>> ranks = new ArrayList<>();
            for (int r = 0; r < w.worldSize(); r++) {
                final int rank = r;
                ranks.add(
                        pool.submit(
                                () ->
                                        BenchRun.rank(
                                                w,
                                                scope,
                                                group.communicator(rank),
                                                runWarmup,
                                                runIters,
                                                dispatchDType,
                                                redundantExperts)));
            }
            List<RankTimes> out = new ArrayList<>();
            for (Future<RankTimes> f : ranks) {
                out.add(f.get());
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * One child process per rank ({@code bench-rank}), meeting through port files in a temporary
     * folder.
     */
    private List<RankTimes> runProcesses(
            BenchWorkload w, int runWarmup, int runIters, DispatchDType dispatchDType)
            throws Exception {
        Path dir = Files.createTempDirectory("moe-a2a-bench-");
        String jar =
                Path.of(Main.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                        .toString();
        long groupId = System.nanoTime();
        List<Process> children = new ArrayList<>();
        try {
            for (int r = 0; r < w.worldSize(); r++) {
                children.add(
                        new ProcessBuilder(
                                        JvmOptions.childCommand(
                                                "-Xmx1g",
                                                "-cp",
                                                jar,
                                                Main.class.getName(),
                                                "bench-rank",
                                                "--workload",
                                                w.name(),
                                                "--rank",
                                                Integer.toString(r),
                                                "--dir",
                                                dir.toString(),
                                                "--group-id",
                                                Long.toString(groupId),
                                                "--iters",
                                                Integer.toString(runIters),
                                                "--warmup",
                                                Integer.toString(runWarmup),
                                                "--scope",
                                                scope.name(),
                                                "--dispatch-dtype",
                                                dispatchDType.label(),
                                                "--redundant-experts",
                                                Integer.toString(redundantExperts)))
                                .redirectErrorStream(true)
                                .redirectOutput(dir.resolve("rank-" + r + ".log").toFile())
                                .start());
            }
            List<RankTimes> out = new ArrayList<>();
            for (int r = 0; r < w.worldSize(); r++) {
                Process p = children.get(r);
                if (!p.waitFor(10, TimeUnit.MINUTES) || p.exitValue() != 0) {
                    throw new IllegalStateException(
                            "bench rank "
                                    + r
                                    + " failed:\n"
                                    + Files.readString(dir.resolve("rank-" + r + ".log")));
                }
                out.add(BenchRankCommand.read(dir.resolve("rank-" + r + ".times")));
            }
            return out;
        } finally {
            for (Process p : children) {
                p.destroyForcibly();
            }
        }
    }

    /** A progress bar on the terminal's stderr; nothing when output is not a terminal. */
    private static void progress(int done, int total, String current) {
        if (System.console() != null) {
            int filled = done * BAR_WIDTH / Math.max(1, total);
            System.err.printf(
                    Locale.ROOT,
                    "\r[%s%s] %d/%d running %s",
                    "#".repeat(filled),
                    " ".repeat(BAR_WIDTH - filled),
                    done,
                    total,
                    current);
            System.err.flush();
        }
    }

    private static void clearProgress() {
        if (System.console() != null) {
            System.err.print("\r" + " ".repeat(BAR_WIDTH + 60) + "\r");
            System.err.flush();
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
