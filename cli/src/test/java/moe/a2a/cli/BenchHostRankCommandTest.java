package moe.a2a.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code bench-host-rank}, the multi-host benchmark's rank: four ranks as threads on loopback, two
 * "hosts" of two, flat and hierarchical; both validate and the hierarchical one sends fewer bytes
 * to the other host. A bad {@code --hosts} is refused naming the flag.
 */
@Timeout(120)
class BenchHostRankCommandTest {
    @TempDir Path dir;

    @Test
    void shouldValidateBothModesAndSendFewerBytesAcrossHostsHierarchically() throws Exception {
        long flat = run("flat", 71);
        long hierarchical = run("hierarchical", 72);
        assertThat(hierarchical).isPositive().isLessThan(flat);
    }

    @Test
    void shouldRefuseHostsThatDoNotDivideTheRanks() {
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine().setErr(new PrintWriter(err, true));
        int exit =
                cli.execute(
                        "bench-host-rank",
                        "--workload",
                        "decode",
                        "--rank",
                        "0",
                        "--hosts",
                        "3",
                        "--mode",
                        "flat",
                        "--address",
                        "127.0.0.1",
                        "--dir",
                        dir.toString(),
                        "--group-id",
                        "1",
                        "--iters",
                        "1",
                        "--warmup",
                        "0");
        assertThat(exit).isEqualTo(1);
        assertThat(err.toString()).contains("--hosts: 3 (expected: a divisor of decode's 4 ranks)");
    }

    /** The four ranks of one mode; the inter-host bytes per step over all ranks. */
    private long run(String mode, long groupId) throws Exception {
        Path run = Files.createDirectory(dir.resolve(mode));
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<Integer>> exits = new ArrayList<>();
            for (int r = 0; r < 4; r++) {
                String rank = Integer.toString(r);
                exits.add(
                        pool.submit(
                                () ->
                                        Main.commandLine()
                                                .execute(
                                                        "bench-host-rank",
                                                        "--workload",
                                                        "decode",
                                                        "--rank",
                                                        rank,
                                                        "--hosts",
                                                        "2",
                                                        "--mode",
                                                        mode,
                                                        "--address",
                                                        "127.0.0.1",
                                                        "--dir",
                                                        run.toString(),
                                                        "--group-id",
                                                        Long.toString(groupId),
                                                        "--iters",
                                                        "1",
                                                        "--warmup",
                                                        "0")));
            }
            for (Future<Integer> exit : exits) {
                assertThat(exit.get(100, TimeUnit.SECONDS)).isZero();
            }
        } finally {
            pool.shutdownNow();
        }
        long bytes = 0;
        for (int r = 0; r < 4; r++) {
            JsonObject json =
                    JsonParser.parseString(Files.readString(run.resolve("rank-" + r + ".json")))
                            .getAsJsonObject();
            assertThat(json.get("ok").getAsBoolean()).as(mode + " rank " + r).isTrue();
            assertThat(json.get("mode").getAsString()).isEqualTo(mode);
            bytes += json.get("inter_host_bytes_per_step").getAsLong();
        }
        return bytes;
    }
}
