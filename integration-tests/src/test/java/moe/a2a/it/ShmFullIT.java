package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import moe.a2a.v1.DescribeModelRequest;
import moe.a2a.v1.MoeServiceGrpc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shared-memory folder fills up under load: a control plane on {@code --transport auto} and two
 * worker processes on one small tmpfs serve over shm, every answer checked; worker 1 leaves, the
 * folder is filled to the last byte, and a new worker 1 joins. The group cannot form over shm any
 * more (whichever worker says so first is planned without it); it forms over tcp instead, saying
 * why once, and the answers go on, right. Needs root to mount the tmpfs; skipped without it, unless
 * {@code MOE_A2A_IT_REQUIRE_NETNS=1} (.ci/run).
 */
@Timeout(240)
class ShmFullIT {
    @TempDir Path dir;

    final SeededTraffic traffic = new SeededTraffic(43, 8, 64, 64, 2, 1);

    @Test
    void shouldFormOverTcpWhenTheShmFolderFillsUp() throws Exception {
        Path shm = Files.createDirectory(dir.resolve("shm"));
        boolean mounted =
                "root".equals(System.getProperty("user.name"))
                        && WorkerNetwork.run(
                                        "mount",
                                        "-t",
                                        "tmpfs",
                                        "-o",
                                        "size=8m",
                                        "tmpfs",
                                        shm.toString())
                                == 0;
        if ("1".equals(System.getenv("MOE_A2A_IT_REQUIRE_NETNS"))) {
            assertThat(mounted).as("root and mount (see .ci/run)").isTrue();
        }
        assumeTrue(mounted, "a small tmpfs needs root: skipped");
        int port = CliProcess.freePort();
        List<CliProcess> processes = new ArrayList<>();
        Supplier<String> logs = () -> CliProcess.logs(processes);
        ManagedChannel channel =
                NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        try {
            List<String> flags = new ArrayList<>(List.of("--transport", "auto"));
            flags.addAll(List.of("--metrics-port", "0", "--heartbeat-timeout", "2s"));
            flags.addAll(traffic.modelFlags());
            CliProcess cp =
                    CliProcess.controlPlane(dir, "control-plane", List.of(), port, 0, 2, flags);
            processes.add(cp);
            cp.awaitServingPort(Duration.ofSeconds(60));
            int clusterPort = cp.awaitClusterPort(Duration.ofSeconds(1));
            CliProcess first = CliProcess.shmWorker(dir, "worker-0", clusterPort, 0, shm);
            CliProcess leaving = CliProcess.shmWorker(dir, "worker-1", clusterPort, 1, shm);
            processes.addAll(List.of(first, leaving));
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(60), processes);
            assertThat(transport(channel)).isEqualTo("shm");
            CheckedLoad load = new CheckedLoad(traffic, channel, 1, 1_000_000L, 30);
            load.awaitAnswers(20, logs);

            leaving.terminate();
            assertThat(leaving.awaitExit(Duration.ofSeconds(30))).isZero();
            CliProcess.awaitHealth(
                    channel, ServingStatus.NOT_SERVING, Duration.ofSeconds(30), processes);
            ShmFolders.awaitNoGroupFiles(shm);
            long filled = ShmFolders.fill(shm.resolve("filler"));
            CliProcess joining = CliProcess.shmWorker(dir, "worker-1-again", clusterPort, 1, shm);
            processes.add(joining);
            cp.awaitOutput(" cannot run shm (", Duration.ofSeconds(60));
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(60), processes);
            load.awaitAnswers(20, logs);
            load.stop();

            assertThat(filled).as("bytes the filler took").isPositive();
            assertThat(transport(channel)).isEqualTo("tcp");
            assertThat(cp.output())
                    .contains("no room for")
                    .containsPattern(
                            "planning rank [01] without shm for 10 s, then at the next formation");
            assertThat(load.wrong()).as("answers that differ from the reference").isEmpty();
            assertThat(load.failures())
                    .as("requests that failed while rank 1 was away")
                    .allSatisfy(f -> assertThat(f).startsWith("UNAVAILABLE"));
            assertThat(first.isAlive()).isTrue();
            assertThat(joining.isAlive()).as(joining.output()).isTrue();
            assertThat(first.output() + joining.output()).contains("cannot run shm here");
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                p.close();
            }
            WorkerNetwork.run("umount", "-l", shm.toString());
        }
    }

    private static String transport(ManagedChannel channel) {
        return MoeServiceGrpc.newBlockingStub(channel)
                .describeModel(DescribeModelRequest.getDefaultInstance())
                .getTransport();
    }
}
