package moe.a2a.cli;

import java.nio.file.Path;
import java.util.List;
import moe.a2a.bench.BenchScope;
import moe.a2a.comm.Transport;
import picocli.CommandLine.Option;

/**
 * The flags of {@code moe-a2a bench} for the workloads, and those a {@code --collective} run shares
 * with them (transports, iterations, output, {@code --target}).
 */
final class BenchOptions {
    @Option(
            names = "--workload",
            defaultValue = "prefill",
            description =
                    "decode, prefill, prefill-skew, prefill-skew-perm, prefill-n2, prefill-n8 or all (default: ${DEFAULT-VALUE}).")
    String workload;

    @Option(
            names = "--routing-trace",
            paramLabel = "FILE",
            description =
                    "Replay a routing trace (serve --record-routing) instead of a canonical workload: one layer's tokens in recorded order over the trace's ranks, at most 2048 per rank, in rows of the canonical shape (bf16, H = 7168).")
    Path routingTrace;

    @Option(
            names = "--trace-layer",
            defaultValue = "-1",
            paramLabel = "L",
            description =
                    "With --routing-trace: the layer replayed (default: the lowest layer recorded).")
    int traceLayer;

    @Option(
            names = "--transport",
            defaultValue = "local",
            split = ",",
            completionCandidates = BenchTransports.class,
            description =
                    "${COMPLETION-CANDIDATES}, or several separated by commas; with --collective"
                            + " also nccl (one process per GPU) (default: ${DEFAULT-VALUE}).")
    List<Transport> transports;

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
            names = "--mode",
            defaultValue = "normal",
            paramLabel = "normal|low-latency",
            description =
                    "How the dispatcher scope exchanges: normal (counts first, then the rows), or"
                            + " low-latency (fixed regions for the workload's tokens a rank, no count"
                            + " exchange). Not with --target or --scope TRANSPORT (default:"
                            + " ${DEFAULT-VALUE}).")
    String modeName;

    @Option(
            names = "--tokens",
            defaultValue = "0",
            paramLabel = "T",
            description =
                    "Tokens per rank instead of the workload's (e.g. 1, 8 or 32 for decode); the"
                            + " workload is then named NAME-tT and its fingerprint is its own"
                            + " (default: the workload's).")
    int tokens;

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

    @Option(
            names = "--plots",
            paramLabel = "DIR",
            description =
                    "Also write PNG charts: latency per workload and phase, traffic matrices, tokens per expert.")
    Path plots;
}
