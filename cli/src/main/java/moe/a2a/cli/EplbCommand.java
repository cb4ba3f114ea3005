package moe.a2a.cli;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import moe.a2a.bench.BenchWorkloads;
import moe.a2a.dispatch.CoActivation;
import moe.a2a.dispatch.HardwareProfile;
import moe.a2a.dispatch.Placement;
import moe.a2a.dispatch.PlacementPlanner;
import moe.a2a.metrics.Imbalance;
import moe.a2a.protocol.RoutingTrace;
import moe.a2a.workload.BenchRouting;
import moe.a2a.workload.BenchWorkload;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code moe-a2a eplb}: a placement of P slots over N ranks, per layer, from measured expert loads,
 * with each slot's share of its expert's tokens ({@link PlacementPlanner}).
 */
@Command(
        name = "eplb",
        mixinStandardHelpOptions = true,
        description =
                "Plan expert placement from loads: which logical expert each physical slot hosts, and its share of that expert's tokens.")
final class EplbCommand implements Callable<Integer> {
    /** Tokens per rank planned from a routing trace at most. */
    static final int TRACE_TOKENS = 1 << 14;

    /** Swaps {@link CoActivation} tries per layer of a routing trace. */
    static final long COACTIVATION_MOVES = 1_000_000;

    @Option(
            names = "--loads",
            paramLabel = "IN.json",
            description = "{\"loads\": [[load of logical expert e, ...] per layer]}")
    Path loadsFile;

    @Option(
            names = "--workload",
            paramLabel = "W",
            description =
                    "Instead of --loads: plan for a canonical workload's routing over --ranks ranks (its other parameters kept), and print what that routing costs under the contiguous and the planned placement, counted exactly.")
    String workload;

    @Option(
            names = "--routing-trace",
            paramLabel = "FILE",
            description =
                    "Instead of --loads: plan each layer of a routing trace (serve --record-routing), its tokens in recorded order over --ranks ranks (at most 16384 per rank), with the experts tokens choose together moved to share ranks; print what the trace's routing costs under the contiguous and the planned placement, counted exactly.")
    Path routingTrace;

    @Option(
            names = "--compare",
            paramLabel = "FILE",
            description =
                    "With --workload or --routing-trace: also count (and predict) the placement in FILE, in this command's --json form (another planner's, say), one layer per routing; reported as \"file\".")
    Path compare;

    @Option(
            names = "--predict",
            paramLabel = "HARDWARE",
            description =
                    "With --workload: also predict each placement's dispatch, expert and combine time on HARDWARE, a built-in profile (h200-nvlink-8, h200-ib400) or a JSON file {\"ranks_per_node\", \"intra_node_gbps\", \"inter_node_gbps\", \"expert_tflops\"}: peak figures, a model, not a measurement.")
    String predict;

    @Option(names = "--ranks", required = true, description = "N, the ranks.")
    int ranks;

    @Option(
            names = "--slots",
            required = true,
            description = "P, the physical slots: a multiple of N, at least the number of experts.")
    int slots;

    @Option(
            names = "--nodes",
            defaultValue = "1",
            description =
                    "M: with more than one, expert groups are packed to nodes first and replicas stay on their group's node (default: ${DEFAULT-VALUE}).")
    int nodes;

    @Option(
            names = "--groups",
            defaultValue = "1",
            description = "G, the expert groups, with --nodes (default: ${DEFAULT-VALUE}).")
    int groups;

    @Option(
            names = "--json",
            required = true,
            paramLabel = "OUT.json",
            description =
                    "{\"placement\": [[logical expert of slot s, ...] per layer], \"shares\": [[share of slot s, ...] per layer], \"max_over_mean\": [...]}")
    Path out;

    @Override
    public Integer call() throws IOException {
        int given = (loadsFile == null ? 0 : 1) + (workload == null ? 0 : 1);
        if (given + (routingTrace == null ? 0 : 1) != 1) {
            throw new IllegalArgumentException(
                    "--loads, --workload, --routing-trace: give exactly one");
        }
        if (predict != null && loadsFile != null) {
            throw new IllegalArgumentException(
                    "--predict: needs --workload or --routing-trace (the counts come from a"
                            + " routing)");
        }
        List<BenchWorkload> routings = routings();
        List<Placement> compared = compared(routings);
        double[][] loads =
                routings.isEmpty()
                        ? readLoads(loadsFile)
                        : routings.stream().map(BenchRouting::expertLoads).toArray(double[][]::new);
        HardwareProfile hardware = predict == null ? null : EplbPrediction.profile(predict);
        JsonArray costs = new JsonArray();
        JsonArray placement = new JsonArray();
        JsonArray shares = new JsonArray();
        JsonArray balance = new JsonArray();
        for (int layer = 0; layer < loads.length; layer++) {
            PlacementPlanner.Plan plan;
            try {
                plan = PlacementPlanner.plan(loads[layer], ranks, slots, nodes, groups);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("layer " + layer + ": " + e.getMessage(), e);
            }
            BenchWorkload w = routings.isEmpty() ? null : routings.get(layer);
            if (routingTrace != null && nodes == 1) {
                plan =
                        CoActivation.refine(
                                plan,
                                w.experts(),
                                ranks,
                                w.recorded(),
                                w.topK(),
                                COACTIVATION_MOVES);
            }
            JsonArray p = new JsonArray();
            JsonArray s = new JsonArray();
            for (int slot = 0; slot < slots; slot++) {
                p.add(plan.slotExpert()[slot]);
                s.add(plan.share()[slot]);
            }
            placement.add(p);
            shares.add(s);
            double ratio = Imbalance.maxOverMean(plan.rankLoads(loads[layer], ranks));
            balance.add(ratio);
            System.out.printf(
                    Locale.ROOT,
                    "layer %d: max/mean rank load %.4f (one slot per expert in order: %.4f)%n",
                    layer,
                    ratio,
                    Imbalance.maxOverMean(contiguousLoads(loads[layer])));
            if (w != null) {
                costs.add(
                        EplbPrediction.report(
                                w,
                                "contiguous",
                                Placement.contiguous(w.experts(), ranks),
                                hardware));
                costs.add(
                        EplbPrediction.report(
                                w,
                                "planned",
                                plan.placement(Placement.FIRST_VERSION, w.experts(), ranks),
                                hardware));
                if (!compared.isEmpty()) {
                    costs.add(EplbPrediction.report(w, "file", compared.get(layer), hardware));
                }
            }
        }
        JsonObject doc = new JsonObject();
        doc.add("placement", placement);
        doc.add("shares", shares);
        doc.add("max_over_mean", balance);
        if (!routings.isEmpty()) {
            JsonArray names = new JsonArray();
            routings.forEach(r -> names.add(r.name()));
            doc.add("routings", names);
            JsonArray routed = new JsonArray();
            for (double[] layer : loads) {
                JsonArray l = new JsonArray();
                for (double v : layer) {
                    l.add(v);
                }
                routed.add(l);
            }
            doc.add("loads", routed);
            doc.add("costs", costs);
        }
        Gson gson = new GsonBuilder().create();
        Files.writeString(out, gson.toJson(doc) + "\n", StandardCharsets.UTF_8);
        System.out.println("wrote " + out);
        return 0;
    }

    /**
     * The placements of {@code --compare}, one per routing; none without it.
     *
     * @throws IllegalArgumentException without a routing, or with another number of layers
     */
    private List<Placement> compared(List<BenchWorkload> routings) throws IOException {
        if (compare == null) {
            return List.of();
        }
        if (routings.isEmpty()) {
            throw new IllegalArgumentException(
                    "--compare: needs --workload or --routing-trace (the counts come from a"
                            + " routing)");
        }
        List<Placement> out = PlacementFile.read(compare, routings.get(0).experts(), ranks);
        if (out.size() != routings.size()) {
            throw new IllegalArgumentException(
                    "--compare: "
                            + compare
                            + ": "
                            + out.size()
                            + " layers (expected: "
                            + routings.size()
                            + ", one per routing)");
        }
        return out;
    }

    /**
     * The routings planned for, one per layer: the canonical workload's, or each recorded layer of
     * the trace over {@code --ranks}; none with {@code --loads}.
     */
    private List<BenchWorkload> routings() throws IOException {
        if (workload != null) {
            return List.of(EplbPrediction.workload(workload, ranks));
        }
        if (routingTrace == null) {
            return List.of();
        }
        RoutingTrace trace = RoutingTrace.read(routingTrace);
        List<BenchWorkload> out = new ArrayList<>();
        for (int layer : trace.layers()) {
            out.add(
                    BenchWorkloads.replay(
                            trace,
                            layer,
                            ranks,
                            TRACE_TOKENS,
                            BenchWorkloads.traceName(routingTrace, layer),
                            routingTrace));
        }
        return out;
    }

    /** Rank loads with experts in contiguous blocks, one slot each: the placement before EPLB. */
    private double[] contiguousLoads(double[] layer) {
        double[] out = new double[ranks];
        for (int e = 0; e < layer.length; e++) {
            out[(int) ((long) e * ranks / layer.length)] += layer[e];
        }
        return out;
    }

    static double[][] readLoads(Path file) throws IOException {
        JsonElement doc = JsonParser.parseString(Files.readString(file, StandardCharsets.UTF_8));
        if (!doc.isJsonObject() || !doc.getAsJsonObject().has("loads")) {
            throw new IllegalArgumentException(
                    "--loads: " + file + " has no \"loads\" (expected: {\"loads\": [[...], ...]})");
        }
        JsonElement layers = doc.getAsJsonObject().get("loads");
        if (!layers.isJsonArray() || layers.getAsJsonArray().isEmpty()) {
            throw new IllegalArgumentException("loads: not a non-empty array of layers");
        }
        JsonArray array = layers.getAsJsonArray();
        double[][] out = new double[array.size()][];
        for (int l = 0; l < out.length; l++) {
            JsonElement layer = array.get(l);
            if (!layer.isJsonArray()) {
                throw new IllegalArgumentException("loads[" + l + "]: not an array of loads");
            }
            JsonArray values = layer.getAsJsonArray();
            out[l] = new double[values.size()];
            for (int e = 0; e < values.size(); e++) {
                JsonElement v = values.get(e);
                if (!v.isJsonPrimitive() || !v.getAsJsonPrimitive().isNumber()) {
                    throw new IllegalArgumentException(
                            "loads[" + l + "][" + e + "]: " + v + " (expected: a number)");
                }
                out[l][e] = v.getAsDouble();
            }
            if (l > 0 && out[l].length != out[0].length) {
                throw new IllegalArgumentException(
                        "loads["
                                + l
                                + "]: "
                                + out[l].length
                                + " experts (expected: "
                                + out[0].length
                                + ", as loads[0])");
            }
        }
        return out;
    }
}
