package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
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
 * A slow link under load: four workers in network namespaces ({@link WorkerNetwork}); rank 2's
 * outgoing link is shaped to 256 kbit/s (tc tbf), slow enough that every step waits on its rows,
 * never so slow that an exchange times out. Nothing fails and every answer equals the reference;
 * the control plane flags rank 2, and only rank 2, as a straggler, and clears the flag once the
 * link runs at full speed again. The group never re-forms: a slow link is not a lost rank.
 */
@Timeout(300)
class SlowLinkIT {
    static final int E = 8;
    static final int WORLD = 4;
    static final int SLOW = 2;

    @TempDir Path dir;

    final SeededTraffic traffic = new SeededTraffic(37, E, 64, 64, 2, 1);

    @Test
    void shouldFlagTheRankBehindASlowLinkWithoutFailingARequest() throws Exception {
        int port = CliProcess.freePort();
        int clusterPort = CliProcess.freePort();
        int metricsPort = CliProcess.freePort();
        List<CliProcess> processes = new ArrayList<>();
        Supplier<String> logs = () -> CliProcess.logs(processes);
        ManagedChannel channel =
                NettyChannelBuilder.forAddress(WorkerNetwork.HOST, port).usePlaintext().build();
        try (WorkerNetwork net = WorkerNetwork.up(WORLD)) {
            List<String> flags = new ArrayList<>(traffic.modelFlags());
            flags.addAll(WorkerNetwork.controlPlaneFlags(metricsPort, 0, 10_000));
            flags.addAll(List.of("--straggler-window", "16"));
            CliProcess cp =
                    CliProcess.controlPlane(
                            dir, "control-plane", List.of(), port, clusterPort, WORLD, flags);
            processes.add(cp);
            cp.awaitServingPort(Duration.ofSeconds(60));
            for (int r = 0; r < WORLD; r++) {
                processes.add(net.worker(dir, "worker-" + r, clusterPort, r));
            }
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(90), processes);
            CheckedLoad load = new CheckedLoad(traffic, channel, 2, 5_000_000L, 30);
            load.awaitAnswers(40, logs);
            assertThat(cp.output()).doesNotContain("is a straggler");

            net.slow(SLOW, "256kbit");
            cp.awaitOutput("rank " + SLOW + " is a straggler", Duration.ofSeconds(90));
            ClusterState whileSlow =
                    MoeServiceGrpc.newBlockingStub(channel)
                            .describeCluster(DescribeClusterRequest.getDefaultInstance());
            String flagged = Scrapes.scrape(WorkerNetwork.HOST, metricsPort);
            net.unslow(SLOW);
            cp.awaitOutput("rank " + SLOW + " keeps up again", Duration.ofSeconds(90));
            String cleared = Scrapes.scrape(WorkerNetwork.HOST, metricsPort);
            load.awaitAnswers(20, logs);
            load.stop();

            assertThat(load.wrong()).as("answers that differ from the reference").isEmpty();
            assertThat(load.failures()).as("requests that failed").isEmpty();
            assertThat(whileSlow.getRanksList())
                    .extracting(RankState::getStraggler)
                    .as("DescribeCluster's straggler flags while rank %d's link was slow", SLOW)
                    .containsExactly(false, false, true, false);
            assertThat(whileSlow.getRanksList())
                    .extracting(RankState::getCondition)
                    .as("a slow link is not a lost rank")
                    .containsOnly(RankCondition.RANK_CONDITION_SERVING);
            for (int r = 0; r < WORLD; r++) {
                String series =
                        "moe_a2a_rank_straggler{rank=\"" + r + "\",role=\"control-plane\"} ";
                assertThat(flagged)
                        .as("the straggler flags in a scrape while slow; the log: %s", verdicts(cp))
                        .contains(series + (r == SLOW ? "1.0" : "0.0"));
                assertThat(cleared).contains(series + "0.0");
            }
            assertThat(cp.output())
                    .as("the group formed once and never broke")
                    .doesNotContain("group broken");
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                p.close();
            }
        }
    }

    /** The control plane's straggler verdicts, in order. */
    private static List<String> verdicts(CliProcess cp) throws IOException {
        return cp.output()
                .lines()
                .filter(l -> l.contains("is a straggler") || l.contains("keeps up again"))
                .toList();
    }
}
