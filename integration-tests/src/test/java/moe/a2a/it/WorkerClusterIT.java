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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * FP8 dispatch and redundant experts across processes: a control plane with {@code --dispatch-dtype
 * fp8 --redundant-experts 2} hands the dispatch dtype to two TCP workers in the model spec and its
 * placement (six slots for four experts, replicas with shares) in Accepted; the client process
 * checks every answer within the FP8 tolerance.
 */
@Timeout(300)
class WorkerClusterIT {
    @TempDir Path dir;

    @Test
    void shouldServeFp8DispatchAndReplicasThroughTcpWorkers() throws Exception {
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
                            "--metrics-port",
                            "0",
                            "--world-size",
                            "2",
                            "--experts",
                            "4",
                            "--hidden",
                            "256",
                            "--ffn",
                            "64",
                            "--seed",
                            "5",
                            "--dispatch-dtype",
                            "fp8",
                            "--redundant-experts",
                            "2");
            processes.add(cp);
            cp.awaitServingPort(Duration.ofSeconds(60));
            for (int rank = 0; rank < 2; rank++) {
                processes.add(
                        CliProcess.moeA2a(
                                dir,
                                "worker-" + rank,
                                "worker",
                                "--control-plane",
                                "127.0.0.1:" + port,
                                "--metrics-port",
                                "0",
                                "--transport",
                                "tcp",
                                "--rank",
                                Integer.toString(rank)));
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
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                p.close();
            }
        }
    }
}
