package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bench} with its ranks as child processes: each child forms its group through its
 * transport's data plane, the run's folder standing in for a control plane. A workload over tcp and
 * shm checks every rank's combined rows against the reference; a collective case checks every
 * element.
 */
@Timeout(300)
class BenchChildRanksIT {
    @TempDir Path dir;

    @Test
    void shouldRunAWorkloadWithChildRanksOverEachTransportBetweenProcesses() throws Exception {
        Path json = dir.resolve("workload.json");
        JsonArray rows =
                bench(
                        json,
                        "--workload",
                        "decode",
                        "--transport",
                        "tcp,shm",
                        "--iters",
                        "2",
                        "--warmup",
                        "1",
                        "--json",
                        json.toString());
        List<String> transports = new ArrayList<>();
        for (JsonElement e : rows) {
            JsonObject row = e.getAsJsonObject();
            transports.add(row.get("transport").getAsString());
            assertThat(row.get("ok").getAsBoolean()).as(row.toString()).isTrue();
            assertThat(row.get("N").getAsInt()).isEqualTo(4);
        }
        assertThat(transports).containsExactly("tcp", "shm");
    }

    @Test
    void shouldRunCollectivesWithChildRanksAndNoWrongElement() throws Exception {
        Path json = dir.resolve("collectives.json");
        JsonArray rows =
                bench(
                        json,
                        "--collective",
                        "allreduce,alltoall",
                        "--transport",
                        "tcp,shm",
                        "--ranks",
                        "2",
                        "--min-bytes",
                        "64",
                        "--max-bytes",
                        "1K",
                        "--iters",
                        "2",
                        "--warmup",
                        "1",
                        "--json",
                        json.toString());
        // 64 B to 1 KiB: 5 sizes of 2 collectives on 2 transports
        assertThat(rows).hasSize(20);
        for (JsonElement e : rows) {
            JsonObject row = e.getAsJsonObject();
            assertThat(row.get("ranks").getAsInt()).isEqualTo(2);
            assertThat(row.get("wrong").getAsLong()).as(row.toString()).isZero();
        }
    }

    private JsonArray bench(Path json, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("bench"));
        command.addAll(List.of(args));
        try (CliProcess bench = CliProcess.moeA2a(dir, "bench", command.toArray(String[]::new))) {
            int exit = bench.awaitExit(Duration.ofSeconds(240));
            assertThat(exit).as(bench.output()).isZero();
            return JsonParser.parseString(Files.readString(json)).getAsJsonArray();
        }
    }
}
