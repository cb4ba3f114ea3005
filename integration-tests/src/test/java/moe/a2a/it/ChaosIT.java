package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
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
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import moe.a2a.v1.MoeServiceGrpc;
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
    final ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
    final Map<String, LongAdder> outcomes = new ConcurrentHashMap<>();
    final AtomicLong slowestFailureMs = new AtomicLong();

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
        AtomicBoolean running = new AtomicBoolean(true);
        List<Thread> clients = new ArrayList<>();
        List<Fault> done = new ArrayList<>();
        Instant start = Instant.now();
        try (WorkerNetwork net = WorkerNetwork.up(WORLD)) {
            List<String> flags = new ArrayList<>(traffic.modelFlags());
            flags.addAll(
                    List.of(
                            "--host",
                            WorkerNetwork.HOST,
                            "--plaintext",
                            "--metrics-port",
                            "0",
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
                            dir, "control-plane-0", List.of(), port, clusterPort, WORLD, flags);
            processes.add(cp);
            cp.awaitServingPort(Duration.ofSeconds(60));
            for (int r = 0; r < WORLD; r++) {
                workers[r] = worker(net, clusterPort, r, 0);
                processes.add(workers[r]);
            }
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(90), processes);
            for (int c = 0; c < 2; c++) {
                final long base = 1_000_000_000L * (c + 1);
                Thread t = new Thread(() -> load(channel, running, base), "client-" + c);
                t.start();
                clients.add(t);
            }
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
                        workers[r] = worker(net, clusterPort, r, f + 1);
                        processes.add(workers[r]);
                    }
                    case STOP -> {
                        what = "SIGSTOP rank " + r + " for " + holdMs + " ms";
                        injected = Instant.now();
                        signal("STOP", workers[r]);
                        Thread.sleep(holdMs);
                        repaired = Instant.now();
                        signal("CONT", workers[r]);
                    }
                    case BURSTS -> {
                        what = "SIGSTOP rank " + r + " 300 ms of every 500 for " + holdMs + " ms";
                        injected = Instant.now();
                        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(holdMs);
                        while (System.nanoTime() < until) {
                            signal("STOP", workers[r]);
                            Thread.sleep(300);
                            signal("CONT", workers[r]);
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
            running.set(false);
            for (Thread t : clients) {
                t.join(TimeUnit.SECONDS.toMillis(REQUEST_DEADLINE_S + 30));
            }
            String report = report(seed, done, start);
            System.out.println(report);
            Files.writeString(Path.of("target", "chaos-report.md"), report, StandardCharsets.UTF_8);

            assertThat(wrong).as("answers that differ from the reference").isEmpty();
            assertThat(outcomes.keySet())
                    .as("requests that never got an answer")
                    .doesNotContain("DEADLINE_EXCEEDED", "CANCELLED");
            assertThat(outcomes.keySet())
                    .as("request outcomes")
                    .allMatch(o -> o.equals("OK") || o.equals("UNAVAILABLE"));
            assertThat(slowestFailureMs.get())
                    .as("the slowest failure, ms (exchange timeout + 2 s at most)")
                    .isLessThanOrEqualTo(EXCHANGE_TIMEOUT_MS + 2000);
        } finally {
            running.set(false);
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                signal("CONT", p);
                p.close();
            }
        }
    }

    private CliProcess worker(WorkerNetwork net, int clusterPort, int rank, int life)
            throws Exception {
        return CliProcess.moeA2aUnder(
                net.in(rank),
                dir,
                "worker-" + rank + "-" + life,
                "worker",
                "--control-plane",
                WorkerNetwork.HOST + ":" + clusterPort,
                "--rank",
                Integer.toString(rank),
                "--data-host",
                WorkerNetwork.address(rank),
                "--transport",
                "tcp",
                "--metrics-port",
                "0");
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
        StringBuilder logs = new StringBuilder();
        for (CliProcess p : processes) {
            logs.append("\n---\n").append(p.output());
        }
        throw new AssertionError("no whole group within 90 s of " + repaired + logs);
    }

    /** Sends requests until told to stop: answers checked, outcomes counted by status. */
    private void load(ManagedChannel channel, AtomicBoolean running, long base) {
        MoeServiceGrpc.MoeServiceBlockingStub stub = MoeServiceGrpc.newBlockingStub(channel);
        for (long seed = base; running.get(); seed++) {
            long start = System.nanoTime();
            try {
                String mismatch = traffic.forwardAndCheck(stub, seed, REQUEST_DEADLINE_S);
                if (mismatch != null) {
                    wrong.add(mismatch);
                }
                outcomes.computeIfAbsent("OK", k -> new LongAdder()).increment();
            } catch (StatusRuntimeException e) {
                slowestFailureMs.accumulateAndGet(
                        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start), Math::max);
                outcomes.computeIfAbsent(e.getStatus().getCode().name(), k -> new LongAdder())
                        .increment();
                try {
                    Thread.sleep(50);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    private String report(long seed, List<Fault> faults, Instant start) {
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
        new TreeMap<>(outcomes)
                .forEach(
                        (k, v) ->
                                s.append("| ")
                                        .append(k)
                                        .append(" | ")
                                        .append(v.sum())
                                        .append(" |\n"));
        s.append(String.format(Locale.ROOT, "| wrong answers | %d |%n", wrong.size()));
        s.append(
                String.format(
                        Locale.ROOT,
                        "%nslowest failure: %d ms%n%nfaults:%n",
                        slowestFailureMs.get()));
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

    private static void signal(String name, CliProcess p) throws Exception {
        new ProcessBuilder("kill", "-" + name, Long.toString(p.pid()))
                .redirectErrorStream(true)
                .start()
                .waitFor(10, TimeUnit.SECONDS);
    }
}
