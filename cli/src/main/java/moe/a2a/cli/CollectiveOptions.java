package moe.a2a.cli;

import java.util.ArrayList;
import java.util.List;
import moe.a2a.bench.Collective;
import moe.a2a.bench.CollectiveCase;
import moe.a2a.comm.CollectiveAlgo;
import moe.a2a.comm.Transport;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;
import picocli.CommandLine.Option;

/** The flags of {@code moe-a2a bench --collective}, and the run they ask for. */
final class CollectiveOptions {
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

    /**
     * The collective run these flags and {@code shared} ask for; an error names the flag. {@code
     * remote}: the server's group decides the ranks, and checks the root against them.
     */
    CollectiveBenchRun.Plan plan(BenchOptions shared, boolean remote) {
        List<Transport> transports = shared.transports;
        int iters = shared.iters;
        int warmup = shared.warmup;
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
}
