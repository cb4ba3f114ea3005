package moe.a2a.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EplbCommandTest {
    @TempDir Path dir;

    @Test
    void shouldWritePlacementWhoseSharesCoverEveryExpert() throws IOException {
        Path in = write("{\"loads\": [[900, 10, 40, 50, 300, 20], [1, 1, 1, 1, 1, 1]]}");
        Path out = dir.resolve("out.json");
        assertThat(
                        run(
                                "eplb",
                                "--loads",
                                in.toString(),
                                "--ranks",
                                "2",
                                "--slots",
                                "8",
                                "--json",
                                out.toString()))
                .isZero();
        JsonObject plan =
                JsonParser.parseString(Files.readString(out, StandardCharsets.UTF_8))
                        .getAsJsonObject();
        for (int layer = 0; layer < 2; layer++) {
            JsonArray slots = plan.getAsJsonArray("placement").get(layer).getAsJsonArray();
            JsonArray shares = plan.getAsJsonArray("shares").get(layer).getAsJsonArray();
            assertThat(slots).hasSize(8);
            double[] sum = new double[6];
            for (int s = 0; s < 8; s++) {
                sum[slots.get(s).getAsInt()] += shares.get(s).getAsDouble();
            }
            for (double v : sum) {
                assertThat(v).isCloseTo(1.0, within(1e-9));
            }
        }
        // 1320 of load on two ranks: the hot expert split over both ranks evens them out
        assertThat(plan.getAsJsonArray("max_over_mean").get(0).getAsDouble())
                .isCloseTo(1.0, within(1e-6));
    }

    @Test
    void shouldCountAndPredictBothPlacementsWhenAWorkloadIsGiven() throws IOException {
        Path out = dir.resolve("out.json");
        assertThat(
                        run(
                                "eplb",
                                "--workload",
                                "prefill-skew",
                                "--ranks",
                                "4",
                                "--slots",
                                "272",
                                "--predict",
                                "h200-nvlink-8",
                                "--json",
                                out.toString()))
                .isZero();
        JsonArray costs =
                JsonParser.parseString(Files.readString(out, StandardCharsets.UTF_8))
                        .getAsJsonObject()
                        .getAsJsonArray("costs");
        JsonObject contiguous = costs.get(0).getAsJsonObject();
        JsonObject planned = costs.get(1).getAsJsonObject();
        assertThat(contiguous.get("placement").getAsString()).isEqualTo("contiguous");
        // the hot experts all sit on rank 0 in the contiguous placement
        assertThat(contiguous.get("pairs_max_over_mean").getAsDouble()).isGreaterThan(3);
        assertThat(planned.get("pairs_max_over_mean").getAsDouble()).isLessThan(1.1);
        // the busiest rank computes fewer pairs, so its experts take less time
        assertThat(planned.get("expert_us").getAsDouble())
                .isLessThan(contiguous.get("expert_us").getAsDouble());
        assertThat(planned.get("dispatch_us").getAsDouble()).isPositive();
    }

    @Test
    void shouldNameTheFlagsWhenLoadsAndWorkloadDisagree() {
        StringWriter err = new StringWriter();
        int exit =
                Main.commandLine()
                        .setErr(new PrintWriter(err, true))
                        .execute(
                                "eplb",
                                "--ranks",
                                "4",
                                "--slots",
                                "272",
                                "--json",
                                dir.resolve("x.json").toString());
        assertThat(exit).isEqualTo(1);
        assertThat(err.toString().strip())
                .isEqualTo("moe-a2a eplb: --loads, --workload: give exactly one");
    }

    @Test
    void shouldNameFieldWhenLoadIsNotANumber() throws IOException {
        assertThat(refusal("{\"loads\": [[1, \"x\", 3]]}", 1, 3))
                .isEqualTo("moe-a2a eplb: loads[0][1]: \"x\" (expected: a number)");
    }

    @Test
    void shouldNameLayerWhenSlotsDoNotFit() throws IOException {
        assertThat(refusal("{\"loads\": [[1, 2, 3]]}", 2, 3))
                .isEqualTo(
                        "moe-a2a eplb: layer 0: slots: 3 (expected: a multiple of ranks=2, >= experts=3)");
    }

    /** Runs eplb on {@code json}; returns its error line, after checking that it failed. */
    private String refusal(String json, int ranks, int slots) throws IOException {
        Path in = write(json);
        StringWriter err = new StringWriter();
        int exit =
                Main.commandLine()
                        .setErr(new PrintWriter(err, true))
                        .execute(
                                "eplb",
                                "--loads",
                                in.toString(),
                                "--ranks",
                                Integer.toString(ranks),
                                "--slots",
                                Integer.toString(slots),
                                "--json",
                                dir.resolve("o.json").toString());
        assertThat(exit).isEqualTo(1);
        return err.toString().strip();
    }

    private Path write(String json) throws IOException {
        Path in = dir.resolve("in.json");
        Files.writeString(in, json, StandardCharsets.UTF_8);
        return in;
    }

    private static int run(String... args) {
        return Main.commandLine().execute(args);
    }
}
