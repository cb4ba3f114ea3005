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
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The control plane killed under load, while its workers are mid-step, and started again on the
 * same ports: the clients' requests fail {@code UNAVAILABLE} while it is down (nothing waits for
 * its deadline, nothing is answered wrong); the workers keep running, rejoin it, asking for their
 * old ranks, and the group forms and serves again, every answer right.
 */
@Timeout(300)
class ControlPlaneRestartIT {
    static final int WORLD = 3;
    static final int REQUEST_DEADLINE_S = 30;

    @TempDir Path dir;

    final SeededTraffic traffic = new SeededTraffic(47, 8, 64, 64, 2, 1);

    @Test
    void shouldServeAgainOnceTheWorkersRejoinARestartedControlPlane() throws Exception {
        int port = CliProcess.freePort();
        int clusterPort = CliProcess.freePort();
        List<CliProcess> processes = new ArrayList<>();
        Supplier<String> logs = () -> CliProcess.logs(processes);
        ManagedChannel channel =
                NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        List<String> flags = new ArrayList<>(traffic.modelFlags());
        flags.addAll(List.of("--metrics-port", "0", "--heartbeat-timeout", "3s"));
        try {
            CliProcess first =
                    CliProcess.controlPlane(
                            dir, "control-plane-0", List.of(), port, clusterPort, WORLD, flags);
            processes.add(first);
            first.awaitServingPort(Duration.ofSeconds(60));
            List<CliProcess> workers = new ArrayList<>();
            for (int r = 0; r < WORLD; r++) {
                workers.add(CliProcess.tcpWorker(dir, clusterPort, r));
            }
            processes.addAll(workers);
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(90), processes);
            CheckedLoad load = new CheckedLoad(traffic, channel, 2, 7_000_000L, REQUEST_DEADLINE_S);
            load.awaitAnswers(40, logs);

            first.kill();
            Thread.sleep(2000);
            CliProcess second =
                    CliProcess.controlPlane(
                            dir, "control-plane-1", List.of(), port, clusterPort, WORLD, flags);
            processes.add(second);
            second.awaitServingPort(Duration.ofSeconds(60));
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(90), processes);
            load.awaitAnswers(40, logs);
            load.stop();

            assertThat(load.wrong()).as("answers that differ from the reference").isEmpty();
            assertThat(load.outcomes().keySet())
                    .as("request outcomes: answered, or refused while the control plane was down")
                    .containsOnly("OK", "UNAVAILABLE");
            assertThat(load.outcomes().get("UNAVAILABLE"))
                    .as("requests refused while the control plane was down")
                    .isPositive();
            assertThat(load.slowestFailureMs())
                    .as("the slowest failure, ms: refused at once, not at its deadline")
                    .isLessThan(TimeUnit.SECONDS.toMillis(REQUEST_DEADLINE_S));
            for (CliProcess worker : workers) {
                assertThat(worker.isAlive()).as("a worker outlives its control plane").isTrue();
            }
            for (int r = 0; r < WORLD; r++) {
                assertThat(second.output())
                        .as("rank %d's worker rejoined the new control plane", r)
                        .containsPattern("\\(rank " + r + "\\) joined \\(");
            }
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                p.close();
            }
        }
    }
}
