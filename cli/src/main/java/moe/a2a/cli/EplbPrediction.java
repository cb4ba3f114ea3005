package moe.a2a.cli;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import moe.a2a.dispatch.HardwareProfile;
import moe.a2a.dispatch.Placement;
import moe.a2a.dispatch.RoutingCost;
import moe.a2a.dispatch.StepPrediction;
import moe.a2a.workload.BenchRouting;
import moe.a2a.workload.BenchWorkload;

/**
 * {@code eplb --workload W --predict HARDWARE}: what a canonical workload's routing costs under the
 * contiguous and the planned placement, counted exactly, and the step time a hardware profile
 * predicts from those counts. Stateless.
 */
final class EplbPrediction {
    /** A DeepSeek-V3 expert's intermediate size, for the experts' FLOPs (its hidden is 7168). */
    static final int FFN = 2048;

    private EplbPrediction() {}

    /** The canonical workload {@code name} over {@code ranks} ranks, its other parameters kept. */
    static BenchWorkload workload(String name, int ranks) {
        BenchWorkload w = BenchWorkload.named(name);
        return new BenchWorkload(
                w.name(),
                ranks,
                w.tokens(),
                w.hidden(),
                w.experts(),
                w.topK(),
                w.zipf(),
                w.permuted(),
                w.seed());
    }

    /** A built-in profile's name, or a JSON file with the record's fields in snake case. */
    static HardwareProfile profile(String nameOrFile) throws IOException {
        Path file = Path.of(nameOrFile);
        if (!Files.isRegularFile(file)) {
            try {
                return HardwareProfile.named(nameOrFile);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("--predict: " + e.getMessage(), e);
            }
        }
        JsonObject o =
                JsonParser.parseString(Files.readString(file, StandardCharsets.UTF_8))
                        .getAsJsonObject();
        try {
            return new HardwareProfile(
                    o.has("name") ? o.get("name").getAsString() : file.getFileName().toString(),
                    field(o, "ranks_per_node").intValue(),
                    field(o, "intra_node_gbps").doubleValue(),
                    o.has("inter_node_gbps") ? field(o, "inter_node_gbps").doubleValue() : 0,
                    field(o, "expert_tflops").doubleValue(),
                    o.has("source") ? o.get("source").getAsString() : "");
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--predict: " + file + ": " + e.getMessage(), e);
        }
    }

    private static Number field(JsonObject o, String name) {
        if (!o.has(name)
                || !o.get(name).isJsonPrimitive()
                || !o.get(name).getAsJsonPrimitive().isNumber()) {
            throw new IllegalArgumentException(name + ": missing or not a number");
        }
        return o.get(name).getAsNumber();
    }

    /** Prints one placement's counts and, with a profile, its predicted step. */
    static JsonObject report(
            BenchWorkload w, String label, Placement placement, HardwareProfile hardware) {
        RoutingCost cost = BenchRouting.cost(w, placement);
        JsonObject o = new JsonObject();
        o.addProperty("placement", label);
        o.addProperty("pairs_max_over_mean", cost.pairsMaxOverMean());
        o.addProperty("rows_total", cost.rowsTotal());
        o.addProperty("rows_recv_max", cost.rowsRecvMax());
        o.addProperty("rows_remote_total", cost.rowsRemoteTotal());
        String line =
                String.format(
                        Locale.ROOT,
                        "%s N=%d %-10s pairs max/mean %.3f, rows %d (busiest rank %d, remote %d)",
                        w.name(),
                        w.worldSize(),
                        label,
                        cost.pairsMaxOverMean(),
                        cost.rowsTotal(),
                        cost.rowsRecvMax(),
                        cost.rowsRemoteTotal());
        if (hardware != null) {
            StepPrediction p =
                    StepPrediction.of(cost, hardware, w.hidden(), FFN, w.rowBytes(), w.rowBytes());
            o.addProperty("dispatch_us", p.dispatchUs());
            o.addProperty("expert_us", p.expertUs());
            o.addProperty("combine_us", p.combineUs());
            line +=
                    String.format(
                            Locale.ROOT,
                            "; predicted on %s: dispatch %.0f us, experts %.0f us, combine %.0f us",
                            hardware.name(),
                            p.dispatchUs(),
                            p.expertUs(),
                            p.combineUs());
        }
        System.out.println(line);
        return o;
    }
}
