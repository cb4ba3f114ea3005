package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.NettyChannelBuilder;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import moe.a2a.v1.MoeServiceGrpc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A slow worker under load: rank 2 is stopped for 300 ms of every 500 (SIGSTOP, SIGCONT), never
 * long enough for an exchange to time out, so most steps wait on it. The control plane flags rank
 * 2, and only rank 2, as a straggler (log and {@code moe_a2a_rank_straggler}), the wait histograms
 * show the others waiting on it, and once it runs freely again the flag clears. Every answer is
 * checked against the reference throughout.
 */
@Timeout(300)
class StragglerIT {
    static final int E = 8;
    static final int H = 64;
    static final int I = 64;
    static final int K = 2;
    static final long SEED = 31;
    static final int WORLD = 4;
    static final int SLOW = 2;

    @TempDir Path dir;

    final SeededTraffic traffic = new SeededTraffic(SEED, E, H, I, K, 1);
    final ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
    final AtomicLong answered = new AtomicLong();

    @Test
    void shouldFlagTheRankTheOthersWaitOnAndClearItWhenItKeepsUp() throws Exception {
        int port = CliProcess.freePort();
        int clusterPort = CliProcess.freePort();
        int metricsPort = CliProcess.freePort();
        List<CliProcess> processes = new ArrayList<>();
        ManagedChannel channel =
                NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        AtomicBoolean running = new AtomicBoolean(true);
        AtomicBoolean slow = new AtomicBoolean(false);
        List<Thread> threads = new ArrayList<>();
        try {
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
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(90), processes);
            for (int c = 0; c < 2; c++) {
                final long base = 1_000_000L * (c + 1);
                Thread t = new Thread(() -> load(channel, running, base), "client-" + c);
                t.start();
                threads.add(t);
            }
            awaitAnswers(40, processes);
            assertThat(cp.output()).doesNotContain("is a straggler");

            final CliProcess slowed = workers.get(SLOW);
            Thread bursts = bursts(slowed, slow);
            threads.add(bursts);
            cp.awaitOutput("rank " + SLOW + " is a straggler", Duration.ofSeconds(90));
            String flagged = scrape(metricsPort);
            slow.set(false);
            bursts.join(5000);
            signal("CONT", slowed);
            cp.awaitOutput("rank " + SLOW + " keeps up again", Duration.ofSeconds(90));
            String cleared = scrape(metricsPort);
            awaitAnswers(20, processes);
            running.set(false);
            for (Thread t : threads) {
                t.join(60_000);
            }

            assertThat(wrong).as("answers that differ from the reference").isEmpty();
            assertThat(failures).as("no exchange timed out: the bursts are short").isEmpty();
            for (int r = 0; r < WORLD; r++) {
                String series =
                        "moe_a2a_rank_straggler{rank=\"" + r + "\",role=\"control-plane\"} ";
                assertThat(flagged).contains(series + (r == SLOW ? "1.0" : "0.0"));
                assertThat(cleared).contains(series + "0.0");
                if (r != SLOW) {
                    assertThat(cp.output()).doesNotContain("rank " + r + " is a straggler");
                    assertThat(waitedOver100ms(flagged, SLOW))
                            .as("exchange waits over 100 ms on rank %d against rank %d", SLOW, r)
                            .isGreaterThan(waitedOver100ms(flagged, r));
                }
            }
        } finally {
            running.set(false);
            slow.set(false);
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                signal("CONT", p);
                p.close();
            }
        }
    }

    /**
     * With {@code --evict-stragglers} and a replica of every expert, the flagged rank is served
     * around: the group forms without it and answers go on, right; after its eviction (30 s) it is
     * tried again, and the whole group forms once more.
     */
    @Test
    void shouldServeAroundAnEvictedStragglerAndTryItAgain() throws Exception {
        int port = CliProcess.freePort();
        int clusterPort = CliProcess.freePort();
        int metricsPort = CliProcess.freePort();
        List<CliProcess> processes = new ArrayList<>();
        ManagedChannel channel =
                NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        AtomicBoolean running = new AtomicBoolean(true);
        AtomicBoolean slow = new AtomicBoolean(false);
        List<Thread> threads = new ArrayList<>();
        try {
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
                            "16",
                            "--redundant-experts",
                            Integer.toString(E),
                            "--evict-stragglers"));
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
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(90), processes);
            for (int c = 0; c < 2; c++) {
                final long base = 3_000_000L * (c + 1);
                Thread t = new Thread(() -> load(channel, running, base), "client-" + c);
                t.start();
                threads.add(t);
            }
            awaitAnswers(40, processes);
            Thread bursts = bursts(workers.get(SLOW), slow);
            threads.add(bursts);
            cp.awaitOutput("evicting straggler rank " + SLOW + " for 30 s", Duration.ofSeconds(90));
            cp.awaitOutput("degraded: serving with ranks [0, 1, 3] of 4", Duration.ofSeconds(30));
            awaitAnswers(40, processes);
            slow.set(false);
            bursts.join(5000);
            signal("CONT", workers.get(SLOW));
            cp.awaitOutput(
                    "trying evicted straggler rank " + SLOW + " again", Duration.ofSeconds(60));
            cp.awaitOutput("whole again", Duration.ofSeconds(30));
            awaitAnswers(20, processes);
            running.set(false);
            for (Thread t : threads) {
                t.join(60_000);
            }
            assertThat(wrong).as("answers that differ from the reference").isEmpty();
            assertThat(failures)
                    .as("only the steps in flight when the group re-formed failed")
                    .allSatisfy(f -> assertThat(f).startsWith("UNAVAILABLE"));
            assertThat(scrape(metricsPort))
                    .contains("moe_a2a_cluster_degraded_ranks{role=\"control-plane\"} 0.0");
        } finally {
            running.set(false);
            slow.set(false);
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                signal("CONT", p);
                p.close();
            }
        }
    }

    /** Stops {@code worker} for 300 ms of every 500 while {@code slow} holds; started. */
    private static Thread bursts(CliProcess worker, AtomicBoolean slow) {
        slow.set(true);
        Thread bursts =
                new Thread(
                        () -> {
                            try {
                                while (slow.get()) {
                                    signal("STOP", worker);
                                    Thread.sleep(300);
                                    signal("CONT", worker);
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

    /** Dispatch waits on {@code peer} longer than 100 ms, from the scrape's histogram. */
    private static long waitedOver100ms(String scrape, int peer) {
        long count = 0;
        long within = 0;
        for (String line : scrape.lines().toList()) {
            String prefix = "moe_a2a_exchange_wait_seconds";
            String series = "{peer=\"" + peer + "\",phase=\"dispatch\",role=\"control-plane\"";
            if (line.startsWith(prefix + "_count" + series)) {
                count = (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
            if (line.startsWith(prefix + "_bucket" + series + ",le=\"0.1\"}")) {
                within = (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return count - within;
    }

    private static String scrape(int metricsPort) throws Exception {
        return HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(
                                        URI.create("http://127.0.0.1:" + metricsPort + "/metrics"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
    }

    /** Sends requests until told to stop: answers checked, failures kept. */
    private void load(ManagedChannel channel, AtomicBoolean running, long base) {
        MoeServiceGrpc.MoeServiceBlockingStub stub = MoeServiceGrpc.newBlockingStub(channel);
        for (long seed = base; running.get(); seed++) {
            try {
                String mismatch = traffic.forwardAndCheck(stub, seed, 30);
                if (mismatch != null) {
                    wrong.add(mismatch);
                }
                answered.incrementAndGet();
            } catch (StatusRuntimeException e) {
                failures.add(e.getStatus().getCode() + ": " + e.getStatus().getDescription());
            }
        }
    }

    private void awaitAnswers(int more, List<CliProcess> processes) throws Exception {
        long target = answered.get() + more;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (answered.get() < target) {
            if (System.nanoTime() > deadline) {
                StringBuilder logs = new StringBuilder();
                for (CliProcess p : processes) {
                    logs.append("\n---\n").append(p.output());
                }
                throw new AssertionError("fewer than " + more + " answers within 60 s" + logs);
            }
            Thread.sleep(20);
        }
    }

    private static void signal(String name, CliProcess p) throws Exception {
        new ProcessBuilder("kill", "-" + name, Long.toString(p.pid()))
                .redirectErrorStream(true)
                .start()
                .waitFor(10, TimeUnit.SECONDS);
    }
}
