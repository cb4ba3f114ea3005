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
import java.util.Locale;
import java.util.concurrent.Callable;
import moe.a2a.dispatch.HardwareProfile;
import moe.a2a.dispatch.Placement;
import moe.a2a.dispatch.PlacementPlanner;
import moe.a2a.metrics.Imbalance;
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
        if ((loadsFile == null) == (workload == null)) {
            throw new IllegalArgumentException("--loads, --workload: give exactly one");
        }
        if (predict != null && workload == null) {
            throw new IllegalArgumentException(
                    "--predict: needs --workload (the counts come from a routing)");
        }
        BenchWorkload w = workload == null ? null : EplbPrediction.workload(workload, ranks);
        double[][] loads =
                w == null ? readLoads(loadsFile) : new double[][] {BenchRouting.expertLoads(w)};
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
            }
        }
        JsonObject doc = new JsonObject();
        doc.add("placement", placement);
        doc.add("shares", shares);
        doc.add("max_over_mean", balance);
        if (w != null) {
            doc.add("costs", costs);
        }
        Gson gson = new GsonBuilder().create();
        Files.writeString(out, gson.toJson(doc) + "\n", StandardCharsets.UTF_8);
        System.out.println("wrote " + out);
        return 0;
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
