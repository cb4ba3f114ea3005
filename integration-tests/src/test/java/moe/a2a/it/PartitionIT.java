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
import moe.a2a.v1.ClusterState;
import moe.a2a.v1.DescribeClusterRequest;
import moe.a2a.v1.MoeServiceGrpc;
import moe.a2a.v1.RankCondition;
import moe.a2a.v1.RankState;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A link cut between two live workers under load, each worker in a network namespace of its own
 * ({@link WorkerNetwork}), both still connected to the control plane. The step on the cut link
 * fails naming the pair, the control plane sets one end aside and serves degraded on the replicas
 * (every expert has two slots), the set-aside worker keeps its session, and once the link is back
 * the whole group forms again. Every answer is checked against the reference; a failure reaches its
 * client within the exchange timeout + 2 s.
 */
@Timeout(300)
class PartitionIT {
    static final int E = 8;
    static final int WORLD = 4;
    static final long EXCHANGE_TIMEOUT_MS = 2000;

    @TempDir Path dir;

    final SeededTraffic traffic = new SeededTraffic(23, E, 64, 64, 2, 1);

    @Test
    void shouldServeAroundACutLinkAndBeWholeOnceItIsBack() throws Exception {
        int port = CliProcess.freePort();
        int clusterPort = CliProcess.freePort();
        int metricsPort = CliProcess.freePort();
        List<CliProcess> processes = new ArrayList<>();
        Supplier<String> logs = () -> CliProcess.logs(processes);
        ManagedChannel channel =
                NettyChannelBuilder.forAddress(WorkerNetwork.HOST, port).usePlaintext().build();
        try (WorkerNetwork net = WorkerNetwork.up(WORLD)) {
            List<String> flags = new ArrayList<>(traffic.modelFlags());
            flags.addAll(WorkerNetwork.controlPlaneFlags(metricsPort, E, EXCHANGE_TIMEOUT_MS));
            CliProcess cp =
                    CliProcess.controlPlane(
                            dir, "control-plane", List.of(), port, clusterPort, WORLD, flags);
            processes.add(cp);
            cp.awaitServingPort(Duration.ofSeconds(60));
            List<CliProcess> workers = new ArrayList<>();
            for (int r = 0; r < WORLD; r++) {
                workers.add(net.worker(dir, "worker-" + r, clusterPort, r));
            }
            processes.addAll(workers);
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(90), processes);
            CheckedLoad load = new CheckedLoad(traffic, channel, 2, 1_000_000L, 30);
            load.awaitAnswers(20, logs);

            net.cut(1, 2);
            awaitGauge(metricsPort, "moe_a2a_cluster_partitioned_ranks", 1, logs);
            awaitGauge(metricsPort, "moe_a2a_cluster_degraded_ranks", 1, logs);
            ClusterState cut =
                    MoeServiceGrpc.newBlockingStub(channel)
                            .describeCluster(DescribeClusterRequest.getDefaultInstance());
            assertThat(cut.getServing()).isTrue();
            for (RankState rank : cut.getRanksList()) {
                assertThat(rank.getCondition())
                        .as("rank %d while link 1-2 is cut", rank.getRank())
                        .isEqualTo(
                                rank.getRank() == 2
                                        ? RankCondition.RANK_CONDITION_PARTITIONED
                                        : RankCondition.RANK_CONDITION_SERVING);
                assertThat(rank.getWorker()).endsWith("(rank " + rank.getRank() + ")");
            }
            assertThat(cut.getRanks(2).getReason()).startsWith("link to rank 1 cut");
            try (CliProcess health =
                    CliProcess.moeA2a(
                            dir,
                            "health-ranks",
                            "health",
                            "--ranks",
                            "--target",
                            WorkerNetwork.HOST + ":" + port)) {
                assertThat(health.awaitExit(Duration.ofSeconds(60))).as(health.output()).isZero();
                assertThat(health.output())
                        .contains(": SERVING, epoch ")
                        .contains("3 of 4 ranks serve")
                        .containsPattern(
                                "(?m)^2 +partitioned +no +worker \\S+ \\(rank 2\\) +link to rank 1 cut");
            }
            load.awaitAnswers(20, logs);

            net.heal(1, 2);
            awaitGauge(metricsPort, "moe_a2a_cluster_partitioned_ranks", 0, logs);
            awaitGauge(metricsPort, "moe_a2a_cluster_degraded_ranks", 0, logs);
            long epochsWhole = epochs(cp);
            load.awaitAnswers(20, logs);
            load.stop();

            assertThat(load.wrong()).as("answers that differ from the reference").isEmpty();
            assertThat(load.failures())
                    .as("failures while the link was found cut")
                    .isNotEmpty()
                    .allSatisfy(f -> assertThat(f).startsWith("UNAVAILABLE"));
            assertThat(load.slowestFailureMs())
                    .as("the slowest failure, ms (exchange timeout + 2 s at most)")
                    .isLessThanOrEqualTo(EXCHANGE_TIMEOUT_MS + 2000);
            assertThat(cp.output())
                    .contains("links cut between live workers: [1-2]; forming without rank 2")
                    .containsPattern("degraded: serving with ranks \\[0, 1, 3\\] of 4")
                    .contains("rank 2 reaches rank 1 again: forming the group with it")
                    .contains("cut links are back: the whole group formed")
                    .doesNotContain("rank 1 lost")
                    .doesNotContain("rank 2 lost");
            assertThat(epochs(cp)).as("no epoch after the group was whole").isEqualTo(epochsWhole);
            for (CliProcess w : workers) {
                assertThat(w.isAlive()).isTrue();
                assertThat(w.output()).as("sessions never ended").doesNotContain("session ended");
            }
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                p.close();
            }
        }
    }

    private static void awaitGauge(int port, String gauge, int wanted, Supplier<String> logs)
            throws Exception {
        Scrapes.awaitGauge(WorkerNetwork.HOST, port, gauge, wanted, logs);
    }

    /** How many group epochs the control plane has started. */
    private static long epochs(CliProcess cp) throws Exception {
        return cp.output().lines().filter(l -> l.contains("forming group: epoch=")).count();
    }
}
