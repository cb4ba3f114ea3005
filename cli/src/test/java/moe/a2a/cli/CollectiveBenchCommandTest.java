package moe.a2a.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.grpc.netty.NettyServerBuilder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import moe.a2a.control.cluster.EmbeddedCluster;
import moe.a2a.control.grpc.MoeServer;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.SeededWeights;
import moe.a2a.gpu.GpuLibraries;
import moe.a2a.gpu.GpuProbe;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code bench --collective}: one-line refusals naming the flag, a tiny in-process run, a tiny run
 * on a live server's ranks through BenchService ({@code --target}), and {@code --transport nccl}
 * refused in one line where there is no GPU.
 */
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

    @Test
    void shouldFindNoWrongElementsWhenAServersInProcessRanksRunTheCollectives() throws Exception {
        SeededWeights weights = new SeededWeights(3, 4, 16, 16, 1);
        EmbeddedCluster cluster =
                new EmbeddedCluster(
                        new ModelConfig(4, 16, 16, 2, 1), weights, 2, TimeUnit.SECONDS.toNanos(30));
        try (MoeServer server =
                MoeServer.start(
                        NettyServerBuilder.forAddress(
                                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)),
                        cluster,
                        weights,
                        new MoeServer.Settings(64, 64, 1 << 20, 1 << 20, 2, 0, 0),
                        new SimpleMeterRegistry(),
                        true,
                        ServerOptions.CLIENT_SERVICES)) {
            Path json = dir.resolve("remote.json");
            StringWriter err = new StringWriter();
            int exit =
                    Main.commandLine()
                            .setErr(new PrintWriter(err, true))
                            .execute(
                                    "bench",
                                    "--target",
                                    "127.0.0.1:" + server.port(),
                                    "--collective",
                                    "allreduce,reducescatter,broadcast,alltoall",
                                    "--min-bytes",
                                    "8",
                                    "--max-bytes",
                                    "256",
                                    "--dtype",
                                    "fp16",
                                    "--root",
                                    "1",
                                    "--iters",
                                    "2",
                                    "--warmup",
                                    "0",
                                    "--json",
                                    json.toString());
            assertThat(exit).as(err.toString()).isZero();
            JsonArray rows = JsonParser.parseString(Files.readString(json)).getAsJsonArray();
            // 8 B to 256 B: 6 sizes for each of the 4 collectives
            assertThat(rows).hasSize(24);
            for (JsonElement e : rows) {
                JsonObject row = e.getAsJsonObject();
                assertThat(row.get("wrong").getAsLong()).as(row.toString()).isZero();
                assertThat(row.get("transport").getAsString()).isEqualTo("local");
                assertThat(row.get("ranks").getAsInt()).isEqualTo(2);
                assertThat(row.get("dtype").getAsString()).isEqualTo("fp16");
                assertThat(row.get("link_gbs").getAsDouble()).isPositive();
            }
        }
    }

    @Test
    void shouldRefuseGroupFlagsWithTarget() {
        assertThat(
                        fail(
                                "bench",
                                "--target",
                                "127.0.0.1:1",
                                "--collective",
                                "alltoall",
                                "--ranks",
                                "2"))
                .isEqualTo(
                        "moe-a2a bench: --ranks: not with --target (the server's ranks run, on its"
                                + " transport)");
        assertThat(
                        fail(
                                "bench",
                                "--target",
                                "127.0.0.1:1",
                                "--collective",
                                "alltoall",
                                "--transport",
                                "tcp"))
                .startsWith("moe-a2a bench: --transport: not with --target");
    }

    @Test
    void shouldSayInOneLineWhyNcclCannotRun() {
        GpuProbe.Result none =
                new GpuProbe.Result(false, 0, false, 0, "/dev/nvidiactl does not exist", 1000);
        assertThat(BenchCommand.ncclRefusal(none, 2))
                .startsWith(
                        "--transport: nccl needs a usable GPU: no GPU data plane: /dev/nvidiactl"
                                + " does not exist");
        GpuProbe.Result one = new GpuProbe.Result(true, 1, true, 22903, "", 1000);
        assertThat(BenchCommand.ncclRefusal(one, 2))
                .isEqualTo(
                        "--ranks: 2 (expected: at most 1 with --transport nccl, one rank per GPU;"
                                + " the probe found 1)");
        GpuProbe.Result four = new GpuProbe.Result(true, 4, true, 22903, "", 1000);
        assertThat(BenchCommand.ncclRefusal(four, 4)).isNull();
    }

    @Test
    void shouldRefuseNcclInOneLineWhenThisMachineHasNoGpu() {
        GpuProbe.Result probe = GpuProbe.probe(GpuLibraries.resolve(null, null));
        assumeFalse(probe.usable(), "a GPU is here: the refusal cannot be seen");
        String err =
                fail("bench", "--collective", "allreduce", "--transport", "nccl", "--ranks", "2");
        assertThat(err)
                .isEqualTo(
                        "moe-a2a bench: --transport: nccl needs a usable GPU: " + probe.describe())
                .doesNotContain("\n");
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
