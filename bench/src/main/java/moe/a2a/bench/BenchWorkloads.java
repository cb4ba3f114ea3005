package moe.a2a.bench;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import moe.a2a.protocol.RoutingTrace;
import moe.a2a.workload.BenchWorkload;

/**
 * The workloads a bench rank can be named: the canonical ones, or {@code trace:L:FILE}, layer L of
 * a routing trace replayed. A trace's layer becomes one routing over the trace's ranks: its tokens
 * in recorded order, at most {@link #MAX_TOKENS} per rank, rank r sending the r-th run of them.
 * Every process of a run resolves the same name to the same routing. Stateless.
 */
public final class BenchWorkloads {
    /** Tokens per rank replayed at most: the canonical prefill's. */
    public static final int MAX_TOKENS = 2048;

    private static final String TRACE = "trace:";

    private BenchWorkloads() {}

    /**
     * The name of layer {@code layer} of the trace in {@code file}, as {@link #resolve} reads it.
     */
    public static String traceName(Path file, int layer) {
        return TRACE + layer + ":" + file.toAbsolutePath();
    }

    /**
     * The workload called {@code name}.
     *
     * @throws IOException when a trace cannot be read, naming the file and what is wrong
     * @throws IllegalArgumentException for an unknown name, or a trace layer that has no steps or
     *     fewer tokens than ranks
     */
    public static BenchWorkload resolve(String name) throws IOException {
        if (!name.startsWith(TRACE)) {
            return BenchWorkload.named(name);
        }
        String rest = name.substring(TRACE.length());
        int colon = rest.indexOf(':');
        if (colon < 0) {
            throw new IllegalArgumentException(
                    "workload: " + name + " (expected: trace:LAYER:FILE)");
        }
        int layer = Integer.parseInt(rest.substring(0, colon));
        Path file = Path.of(rest.substring(colon + 1));
        RoutingTrace trace = RoutingTrace.read(file);
        return replay(trace, layer, trace.ranks(), MAX_TOKENS, name, file);
    }

    /**
     * Layer {@code layer} of {@code trace} as one routing over {@code n} ranks, at most {@code
     * maxTokens} per rank; see the class comment.
     *
     * @throws IllegalArgumentException when the layer has no steps or fewer tokens than ranks
     */
    public static BenchWorkload replay(
            RoutingTrace trace, int layer, int n, int maxTokens, String name, Path file) {
        List<RoutingTrace.Step> steps = trace.layer(layer);
        if (steps.isEmpty()) {
            throw new IllegalArgumentException(
                    "--trace-layer: "
                            + layer
                            + " (routing trace "
                            + file
                            + " recorded layers "
                            + Arrays.toString(trace.layers())
                            + ")");
        }
        int k = trace.topK();
        long total = steps.stream().mapToLong(RoutingTrace.Step::tokens).sum();
        int perRank = (int) Math.min(maxTokens, total / n);
        if (perRank == 0) {
            throw new IllegalArgumentException(
                    "routing trace "
                            + file
                            + ": layer "
                            + layer
                            + " has "
                            + total
                            + " tokens, fewer than the "
                            + n
                            + " ranks");
        }
        int[][] ids = new int[n][perRank * k];
        int rank = 0;
        int filled = 0;
        for (RoutingTrace.Step s : steps) {
            int from = 0;
            while (from < s.ids().length && rank < n) {
                int take = Math.min(s.ids().length - from, ids[rank].length - filled);
                System.arraycopy(s.ids(), from, ids[rank], filled, take);
                from += take;
                filled += take;
                if (filled == ids[rank].length) {
                    rank++;
                    filled = 0;
                }
            }
        }
        return BenchWorkload.recorded(name, trace.experts(), k, ids);
    }
}
