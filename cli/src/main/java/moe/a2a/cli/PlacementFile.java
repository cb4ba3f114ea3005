package moe.a2a.cli;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import moe.a2a.dispatch.Placement;

/**
 * Placements read from a file in {@code moe-a2a eplb}'s output form: {@code {"placement": [[logical
 * expert of slot s, ...] per layer], "shares": [[share of slot s, ...] per layer]}}, slot s on rank
 * {@code s / (P/N)}; without {@code "shares"} an expert's replicas share evenly. Another planner's
 * placement (DeepSeek's EPLB, say) written this way is scored exactly as moe-a2a's. Stateless.
 */
final class PlacementFile {
    private PlacementFile() {}

    /**
     * Every layer's placement in {@code file}, of {@code experts} over {@code ranks}.
     *
     * @throws IllegalArgumentException naming the file and the field that does not fit
     */
    static List<Placement> read(Path file, int experts, int ranks) throws IOException {
        JsonObject doc;
        try {
            JsonElement parsed =
                    JsonParser.parseString(Files.readString(file, StandardCharsets.UTF_8));
            if (!parsed.isJsonObject() || !parsed.getAsJsonObject().has("placement")) {
                throw bad(file, "no \"placement\" (expected: {\"placement\": [[...], ...]})");
            }
            doc = parsed.getAsJsonObject();
        } catch (JsonParseException e) {
            throw bad(file, "not JSON (" + e.getMessage() + ")");
        }
        JsonArray layers = array(file, doc.get("placement"), "placement");
        JsonArray shares = doc.has("shares") ? array(file, doc.get("shares"), "shares") : null;
        if (shares != null && shares.size() != layers.size()) {
            throw bad(
                    file, "shares: " + shares.size() + " layers (expected: " + layers.size() + ")");
        }
        List<Placement> out = new ArrayList<>();
        for (int l = 0; l < layers.size(); l++) {
            JsonArray slots = array(file, layers.get(l), "placement[" + l + "]");
            if (slots.size() % ranks != 0) {
                throw bad(
                        file,
                        "placement["
                                + l
                                + "]: "
                                + slots.size()
                                + " slots (expected: a multiple of the "
                                + ranks
                                + " ranks)");
            }
            int perRank = slots.size() / ranks;
            int[][] rankExperts = new int[ranks][perRank];
            double[][] rankShares = new double[ranks][perRank];
            JsonArray layerShares =
                    shares == null ? null : array(file, shares.get(l), "shares[" + l + "]");
            if (layerShares != null && layerShares.size() != slots.size()) {
                throw bad(
                        file,
                        "shares[" + l + "]: " + layerShares.size() + " (expected: one per slot)");
            }
            for (int s = 0; s < slots.size(); s++) {
                rankExperts[s / perRank][s % perRank] =
                        number(file, slots.get(s), "placement[" + l + "][" + s + "]").intValue();
                rankShares[s / perRank][s % perRank] =
                        layerShares == null
                                ? 1
                                : number(file, layerShares.get(s), "shares[" + l + "][" + s + "]")
                                        .doubleValue();
            }
            try {
                out.add(
                        layerShares == null
                                ? Placement.of(Placement.FIRST_VERSION, experts, rankExperts)
                                : Placement.of(
                                        Placement.FIRST_VERSION, experts, rankExperts, rankShares));
            } catch (IllegalArgumentException e) {
                throw bad(file, "placement[" + l + "]: " + e.getMessage());
            }
        }
        return out;
    }

    private static JsonArray array(Path file, JsonElement e, String field) {
        if (e == null || !e.isJsonArray()) {
            throw bad(file, field + ": not an array");
        }
        return e.getAsJsonArray();
    }

    private static Number number(Path file, JsonElement e, String field) {
        if (!e.isJsonPrimitive() || !e.getAsJsonPrimitive().isNumber()) {
            throw bad(file, field + ": " + e + " (expected: a number)");
        }
        return e.getAsNumber();
    }

    private static IllegalArgumentException bad(Path file, String what) {
        return new IllegalArgumentException("--compare: " + file + ": " + what);
    }
}
