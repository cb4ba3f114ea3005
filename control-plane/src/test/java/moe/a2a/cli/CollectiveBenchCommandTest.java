package moe.a2a.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code bench --collective}: one-line refusals naming the flag, and a tiny in-process run. */
class CollectiveBenchCommandTest {
    @TempDir Path dir;

    @Test
    void shouldNameTheFlagWhenTheCollectiveIsUnknown() {
        assertThat(fail("bench", "--collective", "allreduce,gossip"))
                .isEqualTo(
                        "moe-a2a bench: --collective: gossip (expected: one of allreduce,"
                                + " allgather, reducescatter, broadcast, alltoall)");
    }

    @Test
    void shouldNameTheFlagWhenBytesAreNotASize() {
        assertThat(fail("bench", "--collective", "allreduce", "--bytes", "64Q"))
                .startsWith("moe-a2a bench: --bytes: 64Q (expected: a size in bytes from 1 to 1G");
        assertThat(fail("bench", "--collective", "allreduce", "--bytes", "0"))
                .startsWith("moe-a2a bench: --bytes: 0 (expected:");
        assertThat(fail("bench", "--collective", "allreduce", "--bytes", "2G"))
                .startsWith("moe-a2a bench: --bytes: 2G (expected:");
        assertThat(
                        fail(
                                "bench",
                                "--collective",
                                "allreduce",
                                "--min-bytes",
                                "1M",
                                "--max-bytes",
                                "8"))
                .startsWith("moe-a2a bench: --max-bytes: 8 (expected: at least --min-bytes 1M");
        assertThat(fail("bench", "--collective", "allreduce", "--min-bytes", "8"))
                .startsWith("moe-a2a bench: --max-bytes: missing");
    }

    @Test
    void shouldNameTheFlagWhenRanksAreOutOfRange() {
        assertThat(fail("bench", "--collective", "allreduce", "--ranks", "1"))
                .isEqualTo("moe-a2a bench: --ranks: 1 (expected: 2 to 64)");
        assertThat(fail("bench", "--collective", "allreduce", "--ranks", "65"))
                .isEqualTo("moe-a2a bench: --ranks: 65 (expected: 2 to 64)");
        assertThat(fail("bench", "--collective", "allreduce", "--ranks", "4", "--scaling"))
                .startsWith("moe-a2a bench: --ranks: 4 (expected: none with --scaling");
    }

    @Test
    void shouldRefuseWorkloadFlagsWithCollectivesAndCollectiveFlagsWithout() {
        assertThat(fail("bench", "--collective", "allreduce", "--workload", "decode"))
                .startsWith("moe-a2a bench: --workload: not with --collective");
        assertThat(fail("bench", "--ranks", "4"))
                .isEqualTo("moe-a2a bench: --ranks: only with --collective");
        assertThat(fail("bench", "--collective", "allreduce", "--dtype", "int8"))
                .isEqualTo("moe-a2a bench: --dtype: int8 (expected: one of bf16, fp16, fp32)");
        assertThat(fail("bench", "--collective", "allreduce", "--op", "prod"))
                .isEqualTo("moe-a2a bench: --op: prod (expected: one of sum, max, min)");
        assertThat(fail("bench", "--collective", "broadcast", "--ranks", "2", "--root", "2"))
                .isEqualTo("moe-a2a bench: --root: 2 (expected: in [0, 2))");
    }

    @Test
    void shouldFindNoWrongElementsWhenEveryCollectiveRunsInProcessAtTinySizes() throws Exception {
        Path json = dir.resolve("coll.json");
        Path plots = dir.resolve("plots");
        StringWriter err = new StringWriter();
        int exit =
                Main.commandLine()
                        .setErr(new PrintWriter(err, true))
                        .execute(
                                "bench",
                                "--collective",
                                "allreduce,allgather,reducescatter,broadcast,alltoall",
                                "--transport",
                                "local",
                                "--ranks",
                                "3",
                                "--min-bytes",
                                "8",
                                "--max-bytes",
                                "1K",
                                "--dtype",
                                "bf16",
                                "--root",
                                "1",
                                "--iters",
                                "2",
                                "--warmup",
                                "1",
                                "--json",
                                json.toString(),
                                "--plots",
                                plots.toString());
        assertThat(exit).as(err.toString()).isZero();
        JsonArray rows = JsonParser.parseString(Files.readString(json)).getAsJsonArray();
        List<String> collectives = new ArrayList<>();
        for (JsonElement e : rows) {
            JsonObject row = e.getAsJsonObject();
            assertThat(row.keySet())
                    .contains(
                            "collective",
                            "transport",
                            "ranks",
                            "bytes",
                            "dtype",
                            "algo",
                            "time_us_p50",
                            "algbw_gbs",
                            "busbw_gbs",
                            "wrong");
            assertThat(row.get("wrong").getAsLong()).as(row.toString()).isZero();
            assertThat(row.get("ranks").getAsInt()).isEqualTo(3);
            assertThat(row.get("dtype").getAsString()).isEqualTo("bf16");
            collectives.add(row.get("collective").getAsString());
        }
        // all-reduce and broadcast: 8 B to 1 KiB, 8 sizes; the blocked ones start at 3 elements
        assertThat(collectives.stream().filter("allreduce"::equals)).hasSize(8);
        assertThat(collectives).contains("allgather", "reducescatter", "broadcast", "alltoall");
        for (String name :
                List.of("allreduce", "allgather", "reducescatter", "broadcast", "alltoall")) {
            assertThat(plots.resolve("busbw-" + name + ".png")).isNotEmptyFile();
        }
    }

    /** Runs the CLI; returns its error output, after checking that it failed. */
    private static String fail(String... args) {
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine().setErr(new PrintWriter(err, true));
        int exit = cli.execute(args);
        assertThat(exit).as(err.toString()).isEqualTo(1);
        return err.toString().strip();
    }
}
