package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import moe.a2a.v1.DescribeModelRequest;
import moe.a2a.v1.MoeServiceGrpc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two worker processes on the shared-memory data plane: a control plane on {@code --transport auto}
 * picks shm for workers of one host that offer it ({@code worker --transport auto}), the client
 * checks every answer against the reference, and once the workers are stopped (SIGTERM) the
 * shared-memory directory holds none of the group's files.
 */
@Timeout(240)
class ShmWorkersIT {
    @TempDir Path dir;

    @Test
    void shouldServeReferenceAnswersOverShmAndLeaveNoFilesBehind() throws Exception {
        Path shm = Files.createDirectory(dir.resolve("shm"));
        int port = CliProcess.freePort();
        List<CliProcess> processes = new ArrayList<>();
        ManagedChannel channel =
                NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        try {
            CliProcess cp =
                    CliProcess.controlPlane(
                            dir,
                            "control-plane",
                            List.of(),
                            port,
                            0,
                            2,
                            List.of(
                                    "--transport",
                                    "auto",
                                    "--metrics-port",
                                    "0",
                                    "--experts",
                                    "8",
                                    "--hidden",
                                    "32",
                                    "--ffn",
                                    "48",
                                    "--seed",
                                    "13"));
            processes.add(cp);
            cp.awaitServingPort(Duration.ofSeconds(60));
            int clusterPort = cp.awaitClusterPort(Duration.ofSeconds(1));
            List<CliProcess> workers = new ArrayList<>();
            for (int rank = 0; rank < 2; rank++) {
                CliProcess worker =
                        CliProcess.moeA2a(
                                dir,
                                "worker-" + rank,
                                "worker",
                                "--control-plane",
                                "127.0.0.1:" + clusterPort,
                                "--metrics-port",
                                "0",
                                "--transport",
                                "auto",
                                "--shm-dir",
                                shm.toString(),
                                "--rank",
                                Integer.toString(rank));
                workers.add(worker);
                processes.add(worker);
            }
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(60), processes);
            assertThat(cp.output()).contains("transport=shm");
            assertThat(
                            MoeServiceGrpc.newBlockingStub(channel)
                                    .describeModel(DescribeModelRequest.getDefaultInstance())
                                    .getTransport())
                    .isEqualTo("shm");
            assertThat(shmFiles(shm)).as("the group's files while it serves").isNotEmpty();
            try (CliProcess client =
                    CliProcess.moeA2a(
                            dir,
                            "client",
                            "client",
                            "--target",
                            "127.0.0.1:" + port,
                            "--requests",
                            "6",
                            "--tokens",
                            "24",
                            "--verify",
                            "-1")) {
                int exit = client.awaitExit(Duration.ofSeconds(120));
                String out = client.output();
                assertThat(exit).as(out).isZero();
                assertThat(out).contains("checked 6 answers against the reference: 0 mismatches");
            }
            for (CliProcess worker : workers) {
                worker.terminate();
            }
            for (CliProcess worker : workers) {
                assertThat(worker.awaitExit(Duration.ofSeconds(30)))
                        .as("a worker stopped by SIGTERM exits 0:\n%s", worker.output())
                        .isZero();
            }
            assertThat(shmFiles(shm))
                    .as("files left in the shm directory after a normal shutdown")
                    .isEmpty();
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                p.close();
            }
        }
    }

    private static List<String> shmFiles(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith("moe-a2a-"))
                    .toList();
        }
    }
}
