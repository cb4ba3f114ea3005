package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

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
                        CliProcess.shmWorker(dir, "worker-" + rank, clusterPort, rank, shm);
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
            assertThat(CliProcess.shmGroupFiles(shm))
                    .as("the group's files while it serves")
                    .isNotEmpty();
            CliProcess.checkSixAnswers(dir, "client", port);
            for (CliProcess worker : workers) {
                worker.terminate();
            }
            for (CliProcess worker : workers) {
                assertThat(worker.awaitExit(Duration.ofSeconds(30)))
                        .as("a worker stopped by SIGTERM exits 0:\n%s", worker.output())
                        .isZero();
            }
            assertThat(CliProcess.shmGroupFiles(shm))
                    .as("files left in the shm directory after a normal shutdown")
                    .isEmpty();
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                p.close();
            }
        }
    }
}
