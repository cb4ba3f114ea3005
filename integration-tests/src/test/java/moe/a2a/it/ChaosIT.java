package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A chaos run: a control plane and four workers, each in a network namespace of its own ({@link
 * WorkerNetwork}), under steady client load with every answer checked against the reference, while
 * a seeded schedule injects one fault at a time: a worker killed and restarted, a worker stopped
 * (SIGSTOP) and resumed, a worker stopped in bursts (300 ms of every 500), a link between two
 * workers cut and healed, a worker's link slowed to 1 Mbit/s (tc tbf), the control plane killed and
 * restarted on its ports. After each fault is repaired the run waits for the whole group before the
 * next. Every expert has two slots, so a lost or set-aside rank is served around.
 *
 * <p>It reports, to its log and {@code target/chaos-report.md}: faults by kind, requests OK and
 * failed by status, wrong answers and requests never answered (both must be 0), the slowest failure
 * (must be within the exchange timeout + 2 s), and per kind the time from the fault to SERVING and
 * from the repair (the link healed, the worker resumed, the replacement worker or control plane
 * joined or started) to the whole group, from the control plane's log. {@code
 * -Dmoe.a2a.chaos.faults=N} and {@code -Dmoe.a2a.chaos.seed=S} size and seed it (CI: 6 faults, one
 * of each kind).
 */
@Timeout(3600)
class ChaosIT {
    static final int E = 8;
    static final int H = 64;
    static final int I = 64;
    static final int K = 2;
    static final long MODEL_SEED = 29;
    static final int WORLD = 4;
    static final long EXCHANGE_TIMEOUT_MS = 2000;
    static final int REQUEST_DEADLINE_S = 30;

    enum Kind {
        KILL,
        STOP,
        BURSTS,
        PARTITION,
        SLOW_LINK,
        CONTROL_PLANE_RESTART
    }

    /**
     * One fault: when it was injected and repaired, when the control plane served again after it,
     * and when the whole group served again after the repair.
     */
    record Fault(
            Kind kind,
            String what,
            Instant injected,
            Instant repaired,
            Instant serving,
            Instant whole) {}

    @TempDir Path dir;

    final SeededTraffic traffic = new SeededTraffic(MODEL_SEED, E, H, I, K, 1);

    @Test
    void shouldAnswerRightOrFailPromptlyThroughEveryFault() throws Exception {
        int faults = Integer.getInteger("moe.a2a.chaos.faults", 6);
        long seed = Long.getLong("moe.a2a.chaos.seed", 1);
        SplittableRandom random = new SplittableRandom(seed);
        int port = CliProcess.freePort();
        int clusterPort = CliProcess.freePort();
        List<CliProcess> processes = new ArrayList<>();
        CliProcess[] workers = new CliProcess[WORLD];
        ManagedChannel channel =
                NettyChannelBuilder.forAddress(WorkerNetwork.HOST, port).usePlaintext().build();
        List<Fault> done = new ArrayList<>();
        Instant start = Instant.now();
        try (WorkerNetwork net = WorkerNetwork.up(WORLD)) {
            List<String> flags = new ArrayList<>(traffic.modelFlags());
            flags.addAll(WorkerNetwork.controlPlaneFlags(0, E, EXCHANGE_TIMEOUT_MS));
            CliProcess cp =
                    CliProcess.controlPlane(
                            dir, "control-plane-0", List.of(), port, clusterPort, WORLD, flags);
            processes.add(cp);
            cp.awaitServingPort(Duration.ofSeconds(60));
            for (int r = 0; r < WORLD; r++) {
                workers[r] = net.worker(dir, "worker-" + r + "-0", clusterPort, r);
                processes.add(workers[r]);
            }
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(90), processes);
            CheckedLoad load =
                    new CheckedLoad(traffic, channel, 2, 1_000_000_000L, REQUEST_DEADLINE_S);
            Thread.sleep(2000);
            List<Kind> block = new ArrayList<>();
            for (int f = 0; f < faults; f++) {
                // every kind once in each block of six, in a seeded order
                if (block.isEmpty()) {
                    block.addAll(List.of(Kind.values()));
                    for (int i = block.size() - 1; i > 0; i--) {
                        Collections.swap(block, i, random.nextInt(i + 1));
                    }
                }
                Kind kind = block.removeLast();
                int r = random.nextInt(WORLD);
                long holdMs = 1000 + random.nextInt(4000);
                Instant injected;
                Instant repaired;
                String what;
                switch (kind) {
                    case KILL -> {
                        what = "kill rank " + r + ", restart after " + holdMs + " ms";
                        injected = Instant.now();
                        workers[r].kill();
                        Thread.sleep(holdMs);
                        repaired = Instant.now();
                        workers[r] = net.worker(dir, "worker-" + r + "-" + (f + 1), clusterPort, r);
                        processes.add(workers[r]);
                    }
                    case STOP -> {
                        what = "SIGSTOP rank " + r + " for " + holdMs + " ms";
                        injected = Instant.now();
                        workers[r].signal("STOP");
                        Thread.sleep(holdMs);
                        repaired = Instant.now();
                        workers[r].signal("CONT");
                    }
                    case BURSTS -> {
                        what = "SIGSTOP rank " + r + " 300 ms of every 500 for " + holdMs + " ms";
                        injected = Instant.now();
                        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(holdMs);
                        while (System.nanoTime() < until) {
                            workers[r].signal("STOP");
                            Thread.sleep(300);
                            workers[r].signal("CONT");
                            Thread.sleep(200);
                        }
                        repaired = Instant.now();
                    }
                    case PARTITION -> {
                        int b = (r + 1 + random.nextInt(WORLD - 1)) % WORLD;
                        what = "cut link " + r + "-" + b + " for " + holdMs + " ms";
                        injected = Instant.now();
                        net.cut(r, b);
                        Thread.sleep(holdMs);
                        repaired = Instant.now();
                        net.heal(r, b);
                    }
                    case SLOW_LINK -> {
                        what = "rank " + r + "'s link at 1 Mbit/s for " + holdMs + " ms";
                        injected = Instant.now();
                        net.slow(r, "1mbit");
                        Thread.sleep(holdMs);
                        repaired = Instant.now();
                        net.unslow(r);
                    }
                    default -> {
                        what = "kill the control plane, restart after " + holdMs + " ms";
                        injected = Instant.now();
                        cp.kill();
                        Thread.sleep(holdMs);
                        repaired = Instant.now();
                        cp =
                                CliProcess.controlPlane(
                                        dir,
                                        "control-plane-" + (f + 1),
                                        List.of(),
                                        port,
                                        clusterPort,
                                        WORLD,
                                        flags);
                        processes.add(cp);
                    }
                }
                Instant whole = awaitWhole(cp, repaired, processes);
                ServedLog served = ServedLog.parse(cp.output(), WORLD);
                // a restarted control plane's log starts with its first epoch
                Instant serving =
                        kind == Kind.CONTROL_PLANE_RESTART
                                ? served.firstServing()
                                : served.servingAfter(injected, whole);
                if (kind == Kind.KILL) {
                    // the replacement's JVM start is not the cluster's: count from its join
                    repaired = served.joinedAfter(r, repaired);
                }
                done.add(new Fault(kind, what, injected, repaired, serving, whole));
                Thread.sleep(1000);
            }
            load.stop();
            String report = report(seed, done, start, load);
            System.out.println(report);
            Files.writeString(Path.of("target", "chaos-report.md"), report, StandardCharsets.UTF_8);

            assertThat(load.wrong()).as("answers that differ from the reference").isEmpty();
            assertThat(load.outcomes().keySet())
                    .as("requests that never got an answer")
                    .doesNotContain("DEADLINE_EXCEEDED", "CANCELLED");
            assertThat(load.outcomes().keySet())
                    .as("request outcomes")
                    .allMatch(o -> o.equals("OK") || o.equals("UNAVAILABLE"));
            assertThat(load.slowestFailureMs())
                    .as("the slowest failure, ms (exchange timeout + 2 s at most)")
                    .isLessThanOrEqualTo(EXCHANGE_TIMEOUT_MS + 2000);
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                p.signal("CONT");
                p.close();
            }
        }
    }

    /**
     * Waits until the whole group serves again after {@code repaired} (a failure the fault causes
     * shows within the exchange timeout, so the log is read from then on), or fails with the logs.
     */
    private static Instant awaitWhole(CliProcess cp, Instant repaired, List<CliProcess> processes)
            throws Exception {
        Thread.sleep(EXCHANGE_TIMEOUT_MS + 1000);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        while (System.nanoTime() < deadline) {
            Instant whole = ServedLog.parse(cp.output(), WORLD).wholeSince(repaired);
            if (whole != null) {
                return whole;
            }
            Thread.sleep(100);
        }
        throw new AssertionError(
                "no whole group within 90 s of " + repaired + CliProcess.logs(processes));
    }

    private static String report(long seed, List<Fault> faults, Instant start, CheckedLoad load) {
        StringBuilder s = new StringBuilder();
        s.append(
                String.format(
                        Locale.ROOT,
                        "## Chaos run: seed %d, %d faults in %d s%n%n",
                        seed,
                        faults.size(),
                        Duration.between(start, Instant.now()).toSeconds()));
        s.append(
                "| fault | count | fault to SERVING p50 / p99 / max (ms) | repair to whole p50 / p99 / max (ms) |\n");
        s.append("|---|---:|---:|---:|\n");
        Map<Kind, List<Long>> toServing = new EnumMap<>(Kind.class);
        Map<Kind, List<Long>> toWhole = new EnumMap<>(Kind.class);
        for (Fault f : faults) {
            toServing
                    .computeIfAbsent(f.kind(), k -> new ArrayList<>())
                    .add(Duration.between(f.injected(), f.serving()).toMillis());
            toWhole.computeIfAbsent(f.kind(), k -> new ArrayList<>())
                    .add(Duration.between(f.repaired(), f.whole()).toMillis());
        }
        for (Kind k : Kind.values()) {
            List<Long> a = toServing.getOrDefault(k, List.of());
            List<Long> b = toWhole.getOrDefault(k, List.of());
            s.append(
                    String.format(
                            Locale.ROOT,
                            "| %s | %d | %s | %s |%n",
                            k,
                            a.size(),
                            spread(a),
                            spread(b)));
        }
        s.append("\n| requests | count |\n|---|---:|\n");
        load.outcomes()
                .forEach((k, v) -> s.append("| ").append(k).append(" | ").append(v).append(" |\n"));
        s.append(String.format(Locale.ROOT, "| wrong answers | %d |%n", load.wrong().size()));
        s.append(
                String.format(
                        Locale.ROOT,
                        "%nslowest failure: %d ms%n%nfaults:%n",
                        load.slowestFailureMs()));
        for (Fault f : faults) {
            s.append("- ").append(f.what()).append('\n');
        }
        return s.toString();
    }

    private static String spread(List<Long> ms) {
        if (ms.isEmpty()) {
            return "-";
        }
        List<Long> sorted = ms.stream().sorted().toList();
        long p50 = sorted.get((sorted.size() - 1) / 2);
        long p99 = sorted.get((int) Math.ceil(0.99 * sorted.size()) - 1);
        return p50 + " / " + p99 + " / " + sorted.get(sorted.size() - 1);
    }
}
