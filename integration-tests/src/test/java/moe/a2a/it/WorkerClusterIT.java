package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import moe.a2a.v1.DescribeModelRequest;
import moe.a2a.v1.ModelInfo;
import moe.a2a.v1.MoeServiceGrpc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * FP8 dispatch, redundant experts and live rebalancing across processes: a control plane with
 * {@code --dispatch-dtype fp8 --redundant-experts 2 --rebalance-every 4} hands the dispatch dtype
 * to two TCP workers in the model spec and its placement (ten slots for eight experts, replicas
 * with shares) in Accepted; skewed traffic then makes it move experts, which the workers load while
 * serving. The client processes check every answer within the FP8 tolerance, before and after. Then
 * {@code bench --target --collective} runs every collective on the two workers' TCP group through
 * BenchService, with no wrong element.
 */
@Timeout(300)
class WorkerClusterIT {
    @TempDir Path dir;

    @Test
    void shouldServeFp8DispatchAndReplicasThroughTcpWorkersAndRebalanceLive() throws Exception {
        int port = CliProcess.freePort();
        List<CliProcess> processes = new ArrayList<>();
        ManagedChannel channel =
                NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        try {
            CliProcess cp =
                    CliProcess.moeA2a(
                            dir,
                            "control-plane",
                            "control-plane",
                            "--port",
                            Integer.toString(port),
                            "--cluster-port",
                            "0",
                            "--metrics-port",
                            "0",
                            "--world-size",
                            "2",
                            "--experts",
                            "8",
                            "--hidden",
                            "256",
                            "--ffn",
                            "64",
                            "--seed",
                            "5",
                            "--dispatch-dtype",
                            "fp8",
                            "--redundant-experts",
                            "2",
                            "--rebalance-every",
                            "4");
            processes.add(cp);
            cp.awaitServingPort(Duration.ofSeconds(60));
            int clusterPort = cp.awaitClusterPort(Duration.ofSeconds(1));
            for (int rank = 0; rank < 2; rank++) {
                processes.add(CliProcess.tcpWorker(dir, clusterPort, rank));
            }
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(60), processes);
            try (CliProcess client =
                    CliProcess.moeA2a(
                            dir,
                            "client",
                            "client",
                            "--target",
                            "127.0.0.1:" + port,
                            "--requests",
                            "8",
                            "--tokens",
                            "40",
                            "--routing",
                            "GATE",
                            "--verify",
                            "-1")) {
                int exit = client.awaitExit(Duration.ofSeconds(120));
                String out = client.output();
                assertThat(exit).as(out).isZero();
                assertThat(out)
                        .contains("dispatch fp8")
                        .contains("checked 8 answers against the reference: 0 mismatches");
            }
            // Zipf-skewed client routing: expert 0 takes about half of the first choices.
            try (CliProcess client =
                    CliProcess.moeA2a(
                            dir,
                            "skewed-client",
                            "client",
                            "--target",
                            "127.0.0.1:" + port,
                            "--requests",
                            "40",
                            "--tokens",
                            "40",
                            "--routing",
                            "TOPK",
                            "--skew",
                            "1.5",
                            "--verify",
                            "-1")) {
                int exit = client.awaitExit(Duration.ofSeconds(120));
                String out = client.output();
                assertThat(exit).as(out).isZero();
                assertThat(out).contains("checked 40 answers against the reference: 0 mismatches");
            }
            ModelInfo info =
                    MoeServiceGrpc.newBlockingStub(channel)
                            .describeModel(DescribeModelRequest.getDefaultInstance());
            assertThat(info.getPlacementVersions(0))
                    .as("the skewed traffic moved layer 0's experts:\n%s", cp.output())
                    .isGreaterThan(1);
            for (CliProcess worker : processes.subList(1, 3)) {
                assertThat(worker.output()).contains("layer 0: placement version 2 in use");
            }
            // every collective on the two workers' TCP group, through BenchService
            Path json = dir.resolve("collectives.json");
            try (CliProcess bench =
                    CliProcess.moeA2a(
                            dir,
                            "bench-collectives",
                            "bench",
                            "--target",
                            "127.0.0.1:" + port,
                            "--collective",
                            "allreduce,allgather,reducescatter,broadcast,alltoall",
                            "--min-bytes",
                            "64",
                            "--max-bytes",
                            "4K",
                            "--root",
                            "1",
                            "--iters",
                            "3",
                            "--warmup",
                            "1",
                            "--json",
                            json.toString())) {
                int exit = bench.awaitExit(Duration.ofSeconds(120));
                String out = bench.output();
                assertThat(exit).as(out).isZero();
                JsonArray rows = JsonParser.parseString(Files.readString(json)).getAsJsonArray();
                // 64 B to 4 KiB: 7 sizes for each of the 5 collectives
                assertThat(rows).as(out).hasSize(35);
                for (JsonElement e : rows) {
                    JsonObject row = e.getAsJsonObject();
                    assertThat(row.get("transport").getAsString()).isEqualTo("tcp");
                    assertThat(row.get("ranks").getAsInt()).isEqualTo(2);
                    assertThat(row.get("wrong").getAsLong()).as(row.toString()).isZero();
                }
            }
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                p.close();
            }
        }
    }
}
