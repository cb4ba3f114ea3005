package moe.a2a.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import moe.a2a.bench.BenchScope;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.DispatchMode;
import moe.a2a.gpu.GpuProbe;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code moe-a2a bench}: the canonical workloads' exchanges on a transport, next to this machine's
 * memcpy bound (and, for tcp, a plain loopback socket pair) measured in the same run. With {@code
 * tcp} and {@code shm} every rank is its own process. This command checks the flags and picks where
 * the ranks run: here ({@link WorkloadBenchRun}, {@link CollectiveBenchRun}) or on a live server's
 * ({@link RemoteBench}).
 */
@Command(
        name = "bench",
        mixinStandardHelpOptions = true,
        description =
                "Time the canonical workloads' dispatch and combine on a transport, next to this machine's limits.")
final class BenchCommand implements Callable<Integer> {
    /** The transports {@code bench --collective} runs here. */
    static final List<Transport> COLLECTIVE_TRANSPORTS = Transports.transports(Transports.all());

    @Mixin BenchOptions options;

    @Mixin CollectiveOptions collective;

    @Mixin ChannelOptions connection;

    @Mixin GpuOptions gpu;

    @Spec CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (collective.collectiveNames != null) {
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
        DispatchDType dispatchDType =
                DispatchDType.parse("--dispatch-dtype", options.dispatchDTypeName);
        if (dispatchDType != DispatchDType.BF16
                && (options.target != null || options.scope == BenchScope.TRANSPORT)) {
            throw new IllegalArgumentException(
                    "--dispatch-dtype: "
                            + dispatchDType.label()
                            + " (expected: bf16 with --target or --scope TRANSPORT, which move bf16"
                            + " rows)");
        }
        DispatchMode mode = DispatchMode.parse("--mode", options.modeName);
        if (mode != DispatchMode.NORMAL
                && (options.target != null || options.scope == BenchScope.TRANSPORT)) {
            throw new IllegalArgumentException(
                    "--mode: "
                            + mode.label()
                            + " (expected: normal with --target or --scope TRANSPORT)");
        }
        if (options.tokens < 0
                || options.tokens > 0 && (options.target != null || options.routingTrace != null)) {
            throw new IllegalArgumentException(
                    "--tokens: "
                            + options.tokens
                            + " (expected: 0, or > 0 with a canonical workload, not with --target"
                            + " or --routing-trace)");
        }
        for (Transport t : options.transports) {
            if (!BenchTransports.ALL.contains(t)) {
                throw new IllegalArgumentException(
                        "--transport: "
                                + t
                                + " (expected: "
                                + Transport.labels(BenchTransports.ALL)
                                + "; the NCCL path is checked by scripts/gpu-check.sh)");
            }
        }
        if (options.expertFfn < 0
                || options.expertFfn > 0
                        && (options.target != null || options.scope == BenchScope.TRANSPORT)) {
            throw new IllegalArgumentException(
                    "--expert-ffn: "
                            + options.expertFfn
                            + " (expected: 0, or > 0 with the dispatcher scope, not with"
                            + " --target)");
        }
        if (options.routingTrace != null && (matched("--workload") || options.target != null)) {
            throw new IllegalArgumentException(
                    "--routing-trace: not with "
                            + (options.target != null ? "--target" : "--workload")
                            + " (a trace is replayed here, in place of the canonical workloads)");
        }
        if (options.routingTrace == null && matched("--trace-layer")) {
            throw new IllegalArgumentException("--trace-layer: only with --routing-trace");
        }
        if (options.target != null) {
            return RemoteBench.run(
                    connection,
                    options.target,
                    options.workload,
                    options.scope,
                    Math.max(0, options.iters),
                    Math.max(0, options.warmup),
                    options.json);
        }
        if (options.redundantExperts != 0
                && (options.target != null || options.scope == BenchScope.TRANSPORT)) {
            throw new IllegalArgumentException(
                    "--redundant-experts: "
                            + options.redundantExperts
                            + " (expected: 0 with --target or --scope TRANSPORT)");
        }
        return WorkloadBenchRun.run(options, dispatchDType, mode);
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
        if (options.target != null) {
            for (String flag : List.of("--transport", "--ranks", "--scaling")) {
                if (matched(flag)) {
                    throw new IllegalArgumentException(
                            flag
                                    + ": not with --target (the server's ranks run, on its"
                                    + " transport)");
                }
            }
            return RemoteBench.collectives(
                    connection,
                    options.target,
                    collective.plan(options, true),
                    options.json,
                    options.plots);
        }
        CollectiveBenchRun.Plan plan = collective.plan(options, false);
        for (Transport t : options.transports) {
            if (!COLLECTIVE_TRANSPORTS.contains(t)) {
                throw new IllegalArgumentException(
                        "--transport: "
                                + t
                                + " (expected: "
                                + Transport.labels(COLLECTIVE_TRANSPORTS)
                                + ")");
            }
        }
        List<String> gpuArgs = new ArrayList<>();
        if (options.transports.stream()
                .anyMatch(t -> Transports.reach(t) == TransportReach.DEVICES)) {
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
        return CollectiveBenchRun.run(plan, gpuArgs, options.json, options.plots);
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

    private boolean matched(String flag) {
        return spec != null && spec.commandLine().getParseResult().hasMatchedOption(flag);
    }
}
