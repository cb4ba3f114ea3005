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
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import moe.a2a.protocol.RoutingTrace;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EplbCommandTest {
    @TempDir Path dir;

    @Test
    void shouldWritePlacementWhoseSharesCoverEveryExpert() throws IOException {
        Path in = write("{\"loads\": [[900, 10, 40, 50, 300, 20], [1, 1, 1, 1, 1, 1]]}");
        JsonObject plan = eplb("--loads", in.toString(), "--ranks", "2", "--slots", "8");
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
        JsonArray costs =
                eplb(
                                "--workload",
                                "prefill-skew",
                                "--ranks",
                                "4",
                                "--slots",
                                "272",
                                "--predict",
                                "h200-nvlink-8")
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
                .isEqualTo("moe-a2a eplb: --loads, --workload, --routing-trace: give exactly one");
    }

    /**
     * The contiguous placement written as a file and given to {@code --compare} costs exactly what
     * the command counts for the contiguous placement itself.
     */
    @Test
    void shouldCountAComparedPlacementFileAsItsOwnPlacement() throws IOException {
        StringBuilder slots = new StringBuilder();
        for (int e = 0; e < 256; e++) {
            slots.append(e == 0 ? "" : ",").append(e);
        }
        Path file = write("{\"placement\": [[" + slots + "]]}");
        JsonObject doc =
                eplb(
                        "--workload",
                        "prefill-skew-perm",
                        "--ranks",
                        "4",
                        "--slots",
                        "272",
                        "--compare",
                        file.toString());
        JsonArray costs = doc.getAsJsonArray("costs");
        JsonObject contiguous = costs.get(0).getAsJsonObject();
        JsonObject compared = costs.get(2).getAsJsonObject();
        assertThat(compared.get("placement").getAsString()).isEqualTo("file");
        for (String field : new String[] {"pairs_max_over_mean", "rows_total", "rows_recv_max"}) {
            assertThat(compared.get(field)).as(field).isEqualTo(contiguous.get(field));
        }
        assertThat(doc.getAsJsonArray("loads").get(0).getAsJsonArray()).hasSize(256);
    }

    @Test
    void shouldNameTheFieldOfAComparedFileThatDoesNotFit() throws IOException {
        Path file = write("{\"placement\": [[0, 1, 2, \"x\"]]}");
        StringWriter err = new StringWriter();
        int exit =
                Main.commandLine()
                        .setErr(new PrintWriter(err, true))
                        .execute(
                                "eplb",
                                "--workload",
                                "decode",
                                "--ranks",
                                "4",
                                "--slots",
                                "256",
                                "--compare",
                                file.toString(),
                                "--json",
                                dir.resolve("x.json").toString());
        assertThat(exit).isEqualTo(1);
        assertThat(err.toString().strip())
                .isEqualTo(
                        "moe-a2a eplb: --compare: "
                                + file
                                + ": placement[0][3]: \"x\" (expected: a number)");
    }

    /**
     * A trace whose tokens choose experts in sets of 8 scattered over the contiguous ranks: each
     * recorded layer is planned, balanced, and with its sets gathered, fewer rows than contiguous.
     */
    @Test
    void shouldPlanEveryLayerOfARoutingTraceWithFewerRows() throws IOException {
        SplittableRandom rnd = new SplittableRandom(4);
        int experts = 64;
        int k = 4;
        List<RoutingTrace.Step> steps = new ArrayList<>();
        for (int layer : new int[] {0, 2}) {
            int tokens = 4 * 400;
            int[] ids = new int[tokens * k];
            for (int t = 0; t < tokens; t++) {
                int set = Math.min(rnd.nextInt(8), rnd.nextInt(8));
                for (int j = 0; j < k; j++) {
                    int e;
                    do {
                        // set members 8 apart: the contiguous placement spreads a set over all
                        // ranks
                        e =
                                rnd.nextDouble() < 0.9
                                        ? set + 8 * rnd.nextInt(8)
                                        : rnd.nextInt(experts);
                    } while (chosenBefore(ids, t * k, j, e));
                    ids[t * k + j] = e;
                }
            }
            steps.add(new RoutingTrace.Step(layer, layer, new int[] {400, 400, 400, 400}, ids));
        }
        Path trace = dir.resolve("sets.trace");
        new RoutingTrace(experts, k, 4, 2, 1, steps).write(trace);
        JsonObject doc = eplb("--routing-trace", trace.toString(), "--ranks", "4", "--slots", "72");
        assertThat(doc.getAsJsonArray("routings").get(1).getAsString())
                .isEqualTo("trace:2:" + trace.toAbsolutePath());
        JsonArray costs = doc.getAsJsonArray("costs");
        assertThat(costs).hasSize(4);
        for (int layer = 0; layer < 2; layer++) {
            JsonObject contiguous = costs.get(2 * layer).getAsJsonObject();
            JsonObject planned = costs.get(2 * layer + 1).getAsJsonObject();
            assertThat(planned.get("pairs_max_over_mean").getAsDouble()).isLessThan(1.1);
            assertThat(planned.get("rows_total").getAsLong())
                    .as("layer %d's rows", layer)
                    .isLessThan((long) (0.8 * contiguous.get("rows_total").getAsLong()));
        }
    }

    private static boolean chosenBefore(int[] ids, int from, int count, int e) {
        for (int i = 0; i < count; i++) {
            if (ids[from + i] == e) {
                return true;
            }
        }
        return false;
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

    /** Runs {@code eplb} with {@code args} and {@code --json}; the document it wrote. */
    private JsonObject eplb(String... args) throws IOException {
        Path out = dir.resolve("out.json");
        String[] all = new String[args.length + 3];
        all[0] = "eplb";
        System.arraycopy(args, 0, all, 1, args.length);
        all[args.length + 1] = "--json";
        all[args.length + 2] = out.toString();
        assertThat(Main.commandLine().execute(all)).isZero();
        return JsonParser.parseString(Files.readString(out, StandardCharsets.UTF_8))
                .getAsJsonObject();
    }
}
