package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.Status;
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
    static final int H = 64;
    static final int I = 64;
    static final int K = 2;
    static final int LAYERS = 1;
    static final long SEED = 23;
    static final int WORLD = 4;
    static final long EXCHANGE_TIMEOUT_MS = 2000;

    @TempDir Path dir;

    final SeededTraffic traffic = new SeededTraffic(SEED, E, H, I, K, LAYERS);
    final ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
    final AtomicLong answered = new AtomicLong();
    final AtomicLong slowestFailureMs = new AtomicLong();

    @Test
    void shouldServeAroundACutLinkAndBeWholeOnceItIsBack() throws Exception {
        int port = CliProcess.freePort();
        int clusterPort = CliProcess.freePort();
        int metricsPort = CliProcess.freePort();
        List<CliProcess> processes = new ArrayList<>();
        ManagedChannel channel =
                NettyChannelBuilder.forAddress(WorkerNetwork.HOST, port).usePlaintext().build();
        AtomicBoolean running = new AtomicBoolean(true);
        List<Thread> clients = new ArrayList<>();
        try (WorkerNetwork net = WorkerNetwork.up(WORLD)) {
            List<String> flags = new ArrayList<>(traffic.modelFlags());
            flags.addAll(
                    List.of(
                            "--host",
                            WorkerNetwork.HOST,
                            "--plaintext",
                            "--metrics-port",
                            Integer.toString(metricsPort),
                            "--transport",
                            "tcp",
                            "--redundant-experts",
                            Integer.toString(E),
                            "--exchange-timeout",
                            EXCHANGE_TIMEOUT_MS + "ms",
                            "--heartbeat-timeout",
                            "3s"));
            CliProcess cp =
                    CliProcess.controlPlane(
                            dir, "control-plane", List.of(), port, clusterPort, WORLD, flags);
            processes.add(cp);
            cp.awaitServingPort(Duration.ofSeconds(60));
            List<CliProcess> workers = new ArrayList<>();
            for (int r = 0; r < WORLD; r++) {
                CliProcess w =
                        CliProcess.moeA2aUnder(
                                net.in(r),
                                dir,
                                "worker-" + r,
                                "worker",
                                "--control-plane",
                                WorkerNetwork.HOST + ":" + clusterPort,
                                "--rank",
                                Integer.toString(r),
                                "--data-host",
                                WorkerNetwork.address(r),
                                "--transport",
                                "tcp",
                                "--metrics-port",
                                "0");
                workers.add(w);
                processes.add(w);
            }
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(90), processes);
            for (int c = 0; c < 2; c++) {
                final long base = 1_000_000L * (c + 1);
                Thread t = new Thread(() -> load(channel, running, base), "client-" + c);
                t.start();
                clients.add(t);
            }
            awaitAnswers(20, processes);

            net.cut(1, 2);
            awaitMetric(metricsPort, "moe_a2a_cluster_partitioned_ranks", 1, processes);
            awaitMetric(metricsPort, "moe_a2a_cluster_degraded_ranks", 1, processes);
            awaitAnswers(20, processes);

            net.heal(1, 2);
            awaitMetric(metricsPort, "moe_a2a_cluster_partitioned_ranks", 0, processes);
            awaitMetric(metricsPort, "moe_a2a_cluster_degraded_ranks", 0, processes);
            long epochsWhole = epochs(cp);
            awaitAnswers(20, processes);
            running.set(false);
            for (Thread t : clients) {
                t.join(60_000);
            }

            String log = cp.output();
            assertThat(wrong).as("answers that differ from the reference").isEmpty();
            assertThat(failures)
                    .as("failures while the link was found cut")
                    .isNotEmpty()
                    .allSatisfy(f -> assertThat(f).startsWith("UNAVAILABLE"));
            assertThat(slowestFailureMs.get())
                    .as("the slowest failure, ms (exchange timeout + 2 s at most)")
                    .isLessThanOrEqualTo(EXCHANGE_TIMEOUT_MS + 2000);
            assertThat(log)
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
            running.set(false);
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                p.close();
            }
        }
    }

    /** Sends requests until told to stop: answers checked, failures kept with their latency. */
    private void load(ManagedChannel channel, AtomicBoolean running, long base) {
        MoeServiceGrpc.MoeServiceBlockingStub stub = MoeServiceGrpc.newBlockingStub(channel);
        for (long seed = base; running.get(); seed++) {
            long start = System.nanoTime();
            try {
                String mismatch = traffic.forwardAndCheck(stub, seed, 30);
                if (mismatch != null) {
                    wrong.add(mismatch);
                }
                answered.incrementAndGet();
            } catch (StatusRuntimeException e) {
                slowestFailureMs.accumulateAndGet(
                        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start), Math::max);
                Status s = e.getStatus();
                failures.add(s.getCode() + ": " + s.getDescription());
                try {
                    Thread.sleep(50);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    private void awaitAnswers(int more, List<CliProcess> processes) throws Exception {
        long target = answered.get() + more;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (answered.get() < target) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(
                        "fewer than " + more + " answers within 60 s" + logs(processes));
            }
            Thread.sleep(20);
        }
    }

    private static void awaitMetric(
            int metricsPort, String gauge, int wanted, List<CliProcess> processes)
            throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        HttpRequest scrape =
                HttpRequest.newBuilder(
                                URI.create(
                                        "http://"
                                                + WorkerNetwork.HOST
                                                + ":"
                                                + metricsPort
                                                + "/metrics"))
                        .build();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        String last = "";
        while (System.nanoTime() < deadline) {
            last = http.send(scrape, HttpResponse.BodyHandlers.ofString()).body();
            for (String line : last.lines().toList()) {
                if (line.startsWith(gauge + "{") && line.endsWith(" " + wanted + ".0")) {
                    return;
                }
            }
            Thread.sleep(100);
        }
        throw new AssertionError(gauge + " never " + wanted + ":\n" + last + logs(processes));
    }

    /** How many group epochs the control plane has started. */
    private static long epochs(CliProcess cp) throws Exception {
        return cp.output().lines().filter(l -> l.contains("forming group: epoch=")).count();
    }

    private static String logs(List<CliProcess> processes) throws Exception {
        StringBuilder logs = new StringBuilder();
        for (CliProcess p : processes) {
            logs.append("\n---\n").append(p.output());
        }
        return logs.toString();
    }
}
