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
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import moe.a2a.v1.ClusterState;
import moe.a2a.v1.DescribeClusterRequest;
import moe.a2a.v1.MoeServiceGrpc;
import moe.a2a.v1.RankCondition;
import moe.a2a.v1.RankState;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A slow worker under load: rank 2 is stopped for 300 ms of every 500 (SIGSTOP, SIGCONT), never
 * long enough for an exchange to time out, so most steps wait on it. The control plane flags rank
 * 2, and only rank 2, as a straggler (log and {@code moe_a2a_rank_straggler}), the wait histograms
 * show the others waiting on it, and once it runs freely again the flag clears; with {@code
 * --evict-stragglers} the cluster serves around it meanwhile. Every answer is checked against the
 * reference throughout.
 */
@Timeout(300)
class StragglerIT {
    static final int E = 8;
    static final int WORLD = 4;
    static final int SLOW = 2;

    @TempDir Path dir;

    final SeededTraffic traffic = new SeededTraffic(31, E, 64, 64, 2, 1);
    final List<CliProcess> processes = new ArrayList<>();
    final Supplier<String> logs = () -> CliProcess.logs(processes);
    final AtomicBoolean slow = new AtomicBoolean(false);
    int metricsPort;
    ManagedChannel channel;

    @AfterEach
    void stop() throws Exception {
        slow.set(false);
        if (channel != null) {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        for (CliProcess p : processes) {
            p.signal("CONT");
            p.close();
        }
    }

    @Test
    void shouldFlagTheRankTheOthersWaitOnAndClearItWhenItKeepsUp() throws Exception {
        List<CliProcess> workers = start();
        CliProcess cp = processes.get(0);
        CheckedLoad load = new CheckedLoad(traffic, channel, 2, 1_000_000L, 30);
        load.awaitAnswers(40, logs);
        assertThat(cp.output()).doesNotContain("is a straggler");

        Thread bursts = bursts(workers.get(SLOW));
        cp.awaitOutput("rank " + SLOW + " is a straggler", Duration.ofSeconds(90));
        String flagged = Scrapes.scrape("127.0.0.1", metricsPort);
        ClusterState whileSlow = describe();
        slow.set(false);
        bursts.join(5000);
        workers.get(SLOW).signal("CONT");
        cp.awaitOutput("rank " + SLOW + " keeps up again", Duration.ofSeconds(90));
        String cleared = Scrapes.scrape("127.0.0.1", metricsPort);
        load.awaitAnswers(20, logs);
        load.stop();

        assertThat(load.wrong()).as("answers that differ from the reference").isEmpty();
        assertThat(load.failures()).as("no exchange timed out: the bursts are short").isEmpty();
        assertThat(whileSlow.getRanksList())
                .extracting(RankState::getStraggler)
                .as("DescribeCluster's straggler flags while rank %d was slow", SLOW)
                .containsExactly(false, false, true, false);
        for (int r = 0; r < WORLD; r++) {
            String series = "moe_a2a_rank_straggler{rank=\"" + r + "\",role=\"control-plane\"} ";
            assertThat(flagged).contains(series + (r == SLOW ? "1.0" : "0.0"));
            assertThat(cleared).contains(series + "0.0");
            if (r != SLOW) {
                assertThat(cp.output()).doesNotContain("rank " + r + " is a straggler");
                assertThat(waitedOn(flagged, SLOW))
                        .as("seconds waited on rank %d against rank %d", SLOW, r)
                        .isGreaterThan(waitedOn(flagged, r));
            }
        }
    }

    /**
     * With {@code --evict-stragglers} and a replica of every expert, the flagged rank is served
     * around: the group forms without it and answers go on, right; after its eviction
     * (--straggler-eviction 10s) it is tried again, and the whole group forms once more.
     */
    @Test
    void shouldServeAroundAnEvictedStragglerAndTryItAgain() throws Exception {
        List<CliProcess> workers =
                start(
                        "--redundant-experts",
                        Integer.toString(E),
                        "--evict-stragglers",
                        "--straggler-eviction",
                        "10s");
        CliProcess cp = processes.get(0);
        CheckedLoad load = new CheckedLoad(traffic, channel, 2, 3_000_000L, 30);
        load.awaitAnswers(40, logs);
        Thread bursts = bursts(workers.get(SLOW));
        cp.awaitOutput("evicting straggler rank " + SLOW + " for 10 s", Duration.ofSeconds(90));
        cp.awaitOutput("degraded: serving with ranks [0, 1, 3] of 4", Duration.ofSeconds(30));
        ClusterState evicted = describe();
        slow.set(false);
        bursts.join(5000);
        workers.get(SLOW).signal("CONT");
        load.awaitAnswers(40, logs);
        cp.awaitOutput("trying evicted straggler rank " + SLOW + " again", Duration.ofSeconds(60));
        cp.awaitOutput("whole again", Duration.ofSeconds(30));
        load.awaitAnswers(20, logs);
        load.stop();

        assertThat(load.wrong()).as("answers that differ from the reference").isEmpty();
        assertThat(load.failures())
                .as("only the steps in flight when the group re-formed failed")
                .allSatisfy(f -> assertThat(f).startsWith("UNAVAILABLE"));
        assertThat(Scrapes.scrape("127.0.0.1", metricsPort))
                .contains("moe_a2a_cluster_degraded_ranks{role=\"control-plane\"} 0.0");
        assertThat(evicted.getRanks(SLOW).getCondition())
                .isEqualTo(RankCondition.RANK_CONDITION_EVICTED);
        assertThat(evicted.getRanks(SLOW).getReason())
                .startsWith("evicted as a straggler; tried again at ");
        assertThat(describe().getRanksList())
                .allMatch(r -> r.getCondition() == RankCondition.RANK_CONDITION_SERVING);
    }

    private ClusterState describe() {
        return MoeServiceGrpc.newBlockingStub(channel)
                .describeCluster(DescribeClusterRequest.getDefaultInstance());
    }

    /** A control plane (processes[0]) with {@code more} flags and four TCP workers, serving. */
    private List<CliProcess> start(String... more) throws Exception {
        int port = CliProcess.freePort();
        int clusterPort = CliProcess.freePort();
        metricsPort = CliProcess.freePort();
        channel = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        List<String> flags = new ArrayList<>(traffic.modelFlags());
        flags.addAll(
                List.of(
                        "--metrics-port",
                        Integer.toString(metricsPort),
                        "--exchange-timeout",
                        "10s",
                        "--heartbeat-timeout",
                        "5s",
                        "--straggler-window",
                        "16"));
        flags.addAll(List.of(more));
        CliProcess cp =
                CliProcess.controlPlane(
                        dir, "control-plane", List.of(), port, clusterPort, WORLD, flags);
        processes.add(cp);
        cp.awaitServingPort(Duration.ofSeconds(60));
        List<CliProcess> workers = new ArrayList<>();
        for (int r = 0; r < WORLD; r++) {
            workers.add(CliProcess.tcpWorker(dir, clusterPort, r));
        }
        processes.addAll(workers);
        CliProcess.awaitHealth(channel, ServingStatus.SERVING, Duration.ofSeconds(90), processes);
        return workers;
    }

    /** Stops {@code worker} for 300 ms of every 500 until {@link #slow} is cleared; started. */
    private Thread bursts(CliProcess worker) {
        slow.set(true);
        Thread bursts =
                new Thread(
                        () -> {
                            try {
                                while (slow.get()) {
                                    worker.signal("STOP");
                                    Thread.sleep(300);
                                    worker.signal("CONT");
                                    Thread.sleep(200);
                                }
                            } catch (Exception e) {
                                throw new IllegalStateException(e);
                            }
                        },
                        "bursts");
        bursts.start();
        return bursts;
    }

    /**
     * Seconds the control plane's ranks waited on {@code peer} in dispatch and combine (a pause may
     * land in either), from the scrape's histograms: what the straggler flag compares.
     */
    private static double waitedOn(String scrape, int peer) {
        double seconds = 0;
        for (String phase : List.of("dispatch", "combine")) {
            String series =
                    "moe_a2a_exchange_wait_seconds_sum{peer=\""
                            + peer
                            + "\",phase=\""
                            + phase
                            + "\",role=\"control-plane\"";
            for (String line : scrape.lines().toList()) {
                if (line.startsWith(series)) {
                    seconds += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                }
            }
        }
        return seconds;
    }
}
