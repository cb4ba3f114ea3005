package moe.a2a.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import moe.a2a.bench.BenchPlacement;
import moe.a2a.bench.BenchReport;
import moe.a2a.bench.BenchScope;
import moe.a2a.bench.Collective;
import moe.a2a.bench.CollectiveCase;
import moe.a2a.bench.MachineLimits;
import moe.a2a.bench.RankTimes;
import moe.a2a.comm.CollectiveAlgo;
import moe.a2a.comm.Transport;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.Placement;
import moe.a2a.gpu.GpuProbe;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;
import moe.a2a.kernels.RowKernels;
import moe.a2a.metrics.Imbalance;
import moe.a2a.workload.BenchRouting;
import moe.a2a.workload.BenchWorkload;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code moe-a2a bench}: the canonical workloads' exchanges on a transport, next to this machine's
 * memcpy bound (and, for tcp, a plain loopback socket pair) measured in the same run. With {@code
 * tcp} and {@code shm} every rank is its own process.
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
                    "${COMPLETION-CANDIDATES}, or several separated by commas; with --collective"
                            + " also nccl (one process per GPU) (default: ${DEFAULT-VALUE}).")
    List<Transport> transports;

    /** The transports {@code bench --collective} runs here. */
    static final List<Transport> COLLECTIVE_TRANSPORTS =
            List.of(Transport.LOCAL, Transport.TCP, Transport.SHM, Transport.NCCL);

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
            names = "--expert-ffn",
            defaultValue = "0",
            paramLabel = "I",
            description =
                    "Run real experts (seeded SwiGLU, intermediate size I, fp32) between dispatch"
                            + " and combine, timed, and report the communication share; dispatcher"
                            + " scope, not with --target; 0: none (default: ${DEFAULT-VALUE}).")
    int expertFfn;

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
                    "Run on a live server's ranks through BenchService instead of on local, tcp or shm ranks started here.")
    String target;

    @Mixin ChannelOptions connection;

    @Mixin GpuOptions gpu;

    @Option(
            names = "--collective",
            split = ",",
            paramLabel = "NAME",
            description =
                    "Instead of the workloads, time collectives as nccl-tests does: allreduce,"
                            + " allgather, reducescatter, broadcast, alltoall, or several separated"
                            + " by commas.")
    List<String> collectiveNames;

    @Option(
            names = "--ranks",
            paramLabel = "N",
            description = "--collective: ranks in the group, 2 to 64 (default: 4).")
    Integer ranks;

    @Option(
            names = "--bytes",
            paramLabel = "SIZE",
            description =
                    "--collective: one size, in nccl-tests' meaning (all-reduce, broadcast: the"
                            + " buffer; all-gather: the gathered output; reduce-scatter: the input;"
                            + " all-to-all: the send buffer); 8, 64K, 64M (default: 64M).")
    String bytes;

    @Option(
            names = "--min-bytes",
            paramLabel = "SIZE",
            description = "--collective: the smallest size of a sweep doubling up to --max-bytes.")
    String minBytes;

    @Option(
            names = "--max-bytes",
            paramLabel = "SIZE",
            description = "--collective: the largest size of the sweep.")
    String maxBytes;

    @Option(
            names = "--algo",
            defaultValue = "auto",
            paramLabel = "ring|tree|auto",
            description =
                    "--collective: all-reduce and broadcast algorithm; auto: all-reduce by tree up to"
                            + " 256 KiB and by ring above, broadcast by tree (default:"
                            + " ${DEFAULT-VALUE}).")
    String algoName;

    @Option(
            names = "--dtype",
            defaultValue = "fp32",
            paramLabel = "fp32|bf16|fp16",
            description = "--collective: element type (default: ${DEFAULT-VALUE}).")
    String dtypeName;

    @Option(
            names = "--op",
            defaultValue = "sum",
            paramLabel = "sum|max|min",
            description =
                    "--collective: reduction of all-reduce and reduce-scatter (default: ${DEFAULT-VALUE}).")
    String opName;

    @Option(
            names = "--root",
            defaultValue = "0",
            description = "--collective: broadcast root (default: ${DEFAULT-VALUE}).")
    int root;

    @Option(
            names = "--scaling",
            description =
                    "--collective: run 2, 4 and 8 ranks at the same per-rank buffer and print each"
                            + " row's busbw over the 2-rank row's (scaling efficiency).")
    boolean scaling;

    @Spec CommandSpec spec;

    @Option(
            names = "--plots",
            paramLabel = "DIR",
            description =
                    "Also write PNG charts: latency per workload and phase, traffic matrices, tokens per expert.")
    Path plots;

    @Override
    public Integer call() throws Exception {
        if (collectiveNames != null) {
            return collectives();
        }
        for (String flag :
                List.of(
                        "--ranks",
                        "--bytes",
                        "--min-bytes",
                        "--max-bytes",
                        "--algo",
                        "--dtype",
                        "--op",
                        "--root",
                        "--scaling")) {
            if (matched(flag)) {
                throw new IllegalArgumentException(flag + ": only with --collective");
            }
        }
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
                                + Transport.labels(BenchTransports.ALL.toArray(Transport[]::new))
                                + "; the NCCL path is checked by scripts/gpu-check.sh)");
            }
        }
        if (expertFfn < 0 || expertFfn > 0 && (target != null || scope == BenchScope.TRANSPORT)) {
            throw new IllegalArgumentException(
                    "--expert-ffn: "
                            + expertFfn
                            + " (expected: 0, or > 0 with the dispatcher scope, not with"
                            + " --target)");
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
                                ? LocalBenchRanks.run(
                                        w,
                                        scope,
                                        runWarmup,
                                        runIters,
                                        dispatchDType,
                                        redundantExperts,
                                        expertFfn)
                                : runProcesses(w, transport, runWarmup, runIters, dispatchDType);
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

    /**
     * {@code bench --collective}: checks the flags, then {@link CollectiveBenchRun}, or {@link
     * RemoteBench#collectives} with {@code --target}.
     */
    private int collectives() throws Exception {
        for (String flag :
                List.of(
                        "--workload",
                        "--scope",
                        "--dispatch-dtype",
                        "--redundant-experts",
                        "--expert-ffn")) {
            if (matched(flag)) {
                throw new IllegalArgumentException(
                        flag + ": not with --collective (workloads and collectives run apart)");
            }
        }
        if (target != null) {
            for (String flag : List.of("--transport", "--ranks", "--scaling")) {
                if (matched(flag)) {
                    throw new IllegalArgumentException(
                            flag
                                    + ": not with --target (the server's ranks run, on its"
                                    + " transport)");
                }
            }
            return RemoteBench.collectives(connection, target, collectivePlan(true), json, plots);
        }
        CollectiveBenchRun.Plan plan = collectivePlan(false);
        for (Transport t : transports) {
            if (!COLLECTIVE_TRANSPORTS.contains(t)) {
                throw new IllegalArgumentException(
                        "--transport: "
                                + t
                                + " (expected: "
                                + Transport.labels(COLLECTIVE_TRANSPORTS.toArray(new Transport[0]))
                                + ")");
            }
        }
        List<String> gpuArgs = new ArrayList<>();
        if (transports.contains(Transport.NCCL)) {
            int most = plan.rankCounts().get(plan.rankCounts().size() - 1);
            String refusal = ncclRefusal(gpu.probe(), most);
            if (refusal != null) {
                throw new IllegalArgumentException(refusal);
            }
            if (gpu.cudaLibDir != null) {
                gpuArgs.addAll(List.of("--cuda-lib-dir", gpu.cudaLibDir.toString()));
            }
            if (gpu.ncclLibDir != null) {
                gpuArgs.addAll(List.of("--nccl-lib-dir", gpu.ncclLibDir.toString()));
            }
        }
        return CollectiveBenchRun.run(plan, gpuArgs, json, plots);
    }

    /**
     * Why {@code --transport nccl} cannot run {@code ranks} ranks (one per GPU) on this machine, in
     * one line; null when it can.
     */
    static @Nullable String ncclRefusal(GpuProbe.Result probe, int ranks) {
        if (!probe.usable()) {
            return "--transport: nccl needs a usable GPU: " + probe.describe();
        }
        if (probe.devices() < ranks) {
            return "--ranks: "
                    + ranks
                    + " (expected: at most "
                    + probe.devices()
                    + " with --transport nccl, one rank per GPU; the probe found "
                    + probe.devices()
                    + ")";
        }
        return null;
    }

    /**
     * The collective run the flags ask for; an error names the flag. {@code remote}: the server's
     * group decides the ranks, and checks the root against them.
     */
    CollectiveBenchRun.Plan collectivePlan(boolean remote) {
        List<Collective> collectives = new ArrayList<>();
        for (String name : collectiveNames) {
            Collective c = Collective.parse("--collective", name);
            if (!collectives.contains(c)) {
                collectives.add(c);
            }
        }
        if (scaling && ranks != null) {
            throw new IllegalArgumentException(
                    "--ranks: "
                            + ranks
                            + " (expected: none with --scaling, which runs "
                            + CollectiveBenchRun.SCALING_RANKS
                            + ")");
        }
        int n = ranks == null ? 4 : ranks;
        if (n < 2 || n > CollectiveCase.MAX_RANKS) {
            throw new IllegalArgumentException(
                    "--ranks: " + n + " (expected: 2 to " + CollectiveCase.MAX_RANKS + ")");
        }
        List<Integer> rankCounts = scaling ? CollectiveBenchRun.SCALING_RANKS : List.of(n);
        List<Long> sizes;
        if (bytes != null) {
            if (minBytes != null || maxBytes != null) {
                throw new IllegalArgumentException(
                        "--bytes: not with --min-bytes or --max-bytes (one size, or a sweep)");
            }
            sizes = List.of(ByteSize.parse("--bytes", bytes, CollectiveCase.MAX_BYTES));
        } else if (minBytes != null || maxBytes != null) {
            if (minBytes == null || maxBytes == null) {
                throw new IllegalArgumentException(
                        (minBytes == null ? "--min-bytes" : "--max-bytes")
                                + ": missing (a sweep needs --min-bytes and --max-bytes)");
            }
            long min = ByteSize.parse("--min-bytes", minBytes, CollectiveCase.MAX_BYTES);
            long max = ByteSize.parse("--max-bytes", maxBytes, CollectiveCase.MAX_BYTES);
            if (max < min) {
                throw new IllegalArgumentException(
                        "--max-bytes: "
                                + maxBytes
                                + " (expected: at least --min-bytes "
                                + minBytes
                                + ")");
            }
            sizes = CollectiveCase.sweep(min, max);
        } else {
            sizes = List.of(64L << 20);
        }
        int minRanks = rankCounts.get(0);
        int maxRanks = rankCounts.get(rankCounts.size() - 1);
        if (collectives.contains(Collective.BROADCAST)
                && (root < 0 || (!remote && root >= minRanks))) {
            throw new IllegalArgumentException(
                    "--root: "
                            + root
                            + (remote
                                    ? " (expected: at least 0)"
                                    : " (expected: in [0, " + minRanks + "))"));
        }
        if (scaling) {
            for (long size : sizes) {
                if (collectives.contains(Collective.ALLGATHER)
                        && CollectiveBenchRun.sizeFor(Collective.ALLGATHER, size, maxRanks, true)
                                > CollectiveCase.MAX_BYTES) {
                    throw new IllegalArgumentException(
                            "--bytes: " + size + " (all-gather at 8 ranks would pass 1G)");
                }
            }
        }
        if (iters == 0 || iters < -1) {
            throw new IllegalArgumentException("--iters: " + iters + " (expected: at least 1)");
        }
        return new CollectiveBenchRun.Plan(
                collectives,
                transports,
                rankCounts,
                sizes,
                scaling,
                choice("--dtype", dtypeName, DType.values()),
                choice("--op", opName, ReduceOp.values()),
                choice("--algo", algoName, CollectiveAlgo.values()),
                collectives.contains(Collective.BROADCAST) ? root : 0,
                warmup >= 0 ? warmup : CollectiveBenchRun.DEFAULT_WARMUP,
                iters > 0 ? iters : CollectiveBenchRun.DEFAULT_ITERS);
    }

    private static <E extends Enum<E>> E choice(String field, String text, E[] values) {
        return CollectiveCase.choice(field, text, values, null);
    }

    private boolean matched(String flag) {
        return spec != null && spec.commandLine().getParseResult().hasMatchedOption(flag);
    }

    /**
     * One child process per rank ({@code bench-rank}), over tcp (meeting through port files in a
     * temporary folder) or shm.
     */
    private List<RankTimes> runProcesses(
            BenchWorkload w,
            Transport transport,
            int runWarmup,
            int runIters,
            DispatchDType dispatchDType)
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
                                                "--transport",
                                                transport.label(),
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
                                                Integer.toString(redundantExperts),
                                                "--expert-ffn",
                                                Integer.toString(expertFfn)))
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
