package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import moe.a2a.experts.hf.TinyCheckpoints;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A sharded FP8 DeepSeek-V3 checkpoint directory served by {@code serve --model DIR} and by a
 * control plane whose TCP workers read the same directory; the client process routes every answer
 * through the model's own gate and checks it against the reference it loads from the directory.
 */
@Timeout(300)
class CheckpointIT {
    @TempDir Path dir;

    @Test
    void shouldServeACheckpointDirectoryInProcessAndFromWorkers() throws Exception {
        Path model = dir.resolve("deepseek-tiny");
        TinyCheckpoints.deepSeekV3(model, 3, 64, 48, 8, 1, 3, 9);
        List<CliProcess> processes = new ArrayList<>();
        try {
            CliProcess serve =
                    CliProcess.moeA2a(
                            dir,
                            "serve",
                            "serve",
                            "--port",
                            "0",
                            "--metrics-port",
                            "0",
                            "--world-size",
                            "2",
                            "--model",
                            model.toString(),
                            "--redundant-experts",
                            "2");
            processes.add(serve);
            checkClient(serve.awaitServingPort(Duration.ofSeconds(60)), "serve-client");

            int port = CliProcess.freePort();
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
                            "--model",
                            model.toString());
            processes.add(cp);
            cp.awaitServingPort(Duration.ofSeconds(60));
            int clusterPort = cp.awaitClusterPort(Duration.ofSeconds(1));
            for (int rank = 0; rank < 2; rank++) {
                processes.add(CliProcess.tcpWorker(dir, clusterPort, rank));
            }
            ManagedChannel channel =
                    NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
            try {
                CliProcess.awaitHealth(
                        channel, ServingStatus.SERVING, Duration.ofSeconds(60), processes);
            } finally {
                channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
            checkClient(port, "cluster-client");
        } finally {
            for (CliProcess p : processes) {
                p.close();
            }
        }
    }

    private void checkClient(int port, String name) throws Exception {
        for (String layer : new String[] {"1", "2"}) {
            try (CliProcess client =
                    CliProcess.moeA2a(
                            dir,
                            name + "-" + layer,
                            "client",
                            "--target",
                            "127.0.0.1:" + port,
                            "--requests",
                            "6",
                            "--tokens",
                            "20",
                            "--routing",
                            "GATE",
                            "--layer",
                            layer,
                            "--verify",
                            "-1")) {
                int exit = client.awaitExit(Duration.ofSeconds(120));
                String out = client.output();
                assertThat(exit).as(out).isZero();
                assertThat(out)
                        .contains("model: DeepseekV3ForCausalLM")
                        .contains("MoE layers [1, 2]")
                        .contains("F8_E4M3")
                        .contains("checked 6 answers against the reference: 0 mismatches");
            }
        }
    }
}
