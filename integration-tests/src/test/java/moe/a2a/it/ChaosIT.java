package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
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
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A chaos run: a control plane and four workers in network namespaces ({@link WorkerNetwork}),
 * under steady client load with every answer checked against the reference, while a seeded schedule
 * injects one fault at a time: a worker killed and restarted, a worker stopped (SIGSTOP) and
 * resumed, a worker stopped in bursts (300 ms of every 500), a link cut and healed, a link slowed
 * to 1 Mbit/s (tc tbf), the control plane killed and restarted on its ports; and, where workers
 * share a host, that host's shared-memory folder filled up while one of its workers is replaced.
 * After each fault is repaired the run waits for the whole group before the next. Every expert has
 * two slots, so a lost or set-aside rank is served around where the slots allow.
 *
 * <p>Two layouts ({@link Layout}): four hosts of one worker over tcp; and two hosts of two workers
 * on {@code --transport auto} (tcp rails between the hosts, shm inside each, a small tmpfs a host),
 * where a cut or slowed link is the link between the two hosts.
 *
 * <p>It reports, to its log and {@code target/chaos-report[-hosts].md} (every process's log kept in
 * {@code target/chaos-LAYOUT-logs}): faults by kind, requests OK and failed by status, wrong
 * answers and requests never answered (both must be 0), the slowest failure (must be within the
 * exchange timeout + 2 s), and per kind the time from the fault to SERVING and from the repair (the
 * link healed, the worker resumed, the replacement worker or control plane joined or started) to
 * the whole group, from the control plane's log. {@code -Dmoe.a2a.chaos.faults=N} and {@code
 * -Dmoe.a2a.chaos.seed=S} size and seed it (CI: the layout across hosts, one fault of each kind;
 * the other layout runs only when the faults are given).
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
        CONTROL_PLANE_RESTART,
        SHM_FULL
    }

    /** Where the workers run: rank r on host {@code r % hosts}, a network namespace each. */
    enum Layout {
        /** A host a worker, over tcp. */
        FLAT(WORLD, "tcp", "chaos-report.md"),
        /** Two hosts of two workers: tcp rails between them, shm inside each. */
        HOSTS(2, "auto", "chaos-report-hosts.md");

        final int hosts;
        final String transport;
        final String report;

        Layout(int hosts, String transport, String report) {
            this.hosts = hosts;
            this.transport = transport;
            this.report = report;
        }

        int host(int rank) {
            return rank % hosts;
        }

        /** The faults it injects: a shared-memory folder only matters where hosts share one. */
        List<Kind> kinds() {
            return this == FLAT
                    ? List.of(Kind.values()).subList(0, Kind.SHM_FULL.ordinal())
                    : List.of(Kind.values());
        }
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
    void shouldAnswerRightOrFailPromptlyWithAWorkerAHost() throws Exception {
        // CI runs the layout across hosts, whose faults hold these; each has a test of its own too
        assumeTrue(
                Integer.getInteger("moe.a2a.chaos.faults") != null,
                "a host a worker: on demand (-Dmoe.a2a.chaos.faults=N)");
        run(Layout.FLAT);
    }

    @Test
    void shouldAnswerRightOrFailPromptlyAcrossHostsWithSharedMemory() throws Exception {
        run(Layout.HOSTS);
    }

    private void run(Layout layout) throws Exception {
        int faults = Integer.getInteger("moe.a2a.chaos.faults", layout.kinds().size());
        long seed = Long.getLong("moe.a2a.chaos.seed", 1);
        SplittableRandom random = new SplittableRandom(seed);
        int port = CliProcess.freePort();
        int clusterPort = CliProcess.freePort();
        List<CliProcess> processes = new ArrayList<>();
        List<CliProcess> controlPlanes = new ArrayList<>();
        CliProcess[] workers = new CliProcess[WORLD];
        ManagedChannel channel =
                NettyChannelBuilder.forAddress(WorkerNetwork.HOST, port).usePlaintext().build();
        List<Fault> done = new ArrayList<>();
        Instant start = Instant.now();
        int shmFailures = 0;
        try (WorkerNetwork net = WorkerNetwork.up(layout.hosts)) {
            List<Path> shm = layout == Layout.HOSTS ? net.mountShmFolders(dir, "16m") : List.of();
            WorkerStart workerAt =
                    (r, name) ->
                            layout == Layout.HOSTS
                                    ? net.hostWorker(
                                            dir,
                                            name,
                                            clusterPort,
                                            r,
                                            layout.host(r),
                                            shm.get(layout.host(r)))
                                    : net.worker(dir, name, clusterPort, r);
            List<String> flags = new ArrayList<>(traffic.modelFlags());
            flags.addAll(
                    WorkerNetwork.controlPlaneFlags(layout.transport, 0, E, EXCHANGE_TIMEOUT_MS));
            CliProcess cp =
                    CliProcess.controlPlane(
                            dir, "control-plane-0", List.of(), port, clusterPort, WORLD, flags);
            processes.add(cp);
            controlPlanes.add(cp);
            cp.awaitServingPort(Duration.ofSeconds(60));
            for (int r = 0; r < WORLD; r++) {
                workers[r] = workerAt.start(r, "worker-" + r + "-0");
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
                    block.addAll(layout.kinds());
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
                        workers[r] = workerAt.start(r, "worker-" + r + "-" + (f + 1));
                        processes.add(workers[r]);
                    }
                    case SHM_FULL -> {
                        // the folder bites when a group forms: one of the host's workers leaves
                        // (taking its files; a killed one's stay until the next group sweeps
                        // them) and comes back while the folder is full
                        int h = layout.host(r);
                        what =
                                "fill host "
                                        + h
                                        + "'s shm folder, replace rank "
                                        + r
                                        + " after "
                                        + holdMs
                                        + " ms";
                        int said = count(cp.output(), " cannot run shm (");
                        injected = Instant.now();
                        workers[r].terminate();
                        workers[r].awaitExit(Duration.ofSeconds(30));
                        ShmFolders.awaitNoGroupFiles(shm.get(h));
                        Path filler = shm.get(h).resolve("filler");
                        ShmFolders.fill(filler);
                        Thread.sleep(holdMs);
                        repaired = Instant.now();
                        workers[r] = workerAt.start(r, "worker-" + r + "-" + (f + 1));
                        processes.add(workers[r]);
                        awaitWhole(cp, repaired, processes);
                        if (count(cp.output(), " cannot run shm (") > said) {
                            shmFailures++;
                        }
                        Files.delete(filler);
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
                        int a = layout.host(r);
                        int b = (a + 1 + random.nextInt(layout.hosts - 1)) % layout.hosts;
                        what = "cut link between hosts " + a + "-" + b + " for " + holdMs + " ms";
                        injected = Instant.now();
                        net.cut(a, b);
                        Thread.sleep(holdMs);
                        repaired = Instant.now();
                        net.heal(a, b);
                    }
                    case SLOW_LINK -> {
                        int h = layout.host(r);
                        what = "host " + h + "'s link at 1 Mbit/s for " + holdMs + " ms";
                        injected = Instant.now();
                        net.slow(h, "1mbit");
                        Thread.sleep(holdMs);
                        repaired = Instant.now();
                        net.unslow(h);
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
                        controlPlanes.add(cp);
                    }
                }
                Instant whole = awaitWhole(cp, repaired, processes);
                ServedLog served = ServedLog.parse(cp.output(), WORLD);
                // a restarted control plane's log starts with its first epoch
                Instant serving =
                        kind == Kind.CONTROL_PLANE_RESTART
                                ? served.firstServing()
                                : served.servingAfter(injected, whole);
                if (kind == Kind.KILL || kind == Kind.SHM_FULL) {
                    // the replacement's JVM start is not the cluster's: count from its join
                    repaired = served.joinedAfter(r, repaired);
                }
                done.add(new Fault(kind, what, injected, repaired, serving, whole));
                Thread.sleep(1000);
            }
            load.stop();
            StringBuilder log = new StringBuilder();
            for (CliProcess c : controlPlanes) {
                log.append(c.output());
            }
            String report =
                    report(layout, seed, done, start, load)
                            + shmReport(layout, done, shmFailures, log.toString());
            System.out.println(report);
            Files.writeString(Path.of("target", layout.report), report, StandardCharsets.UTF_8);

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
            if (layout == Layout.HOSTS) {
                assertThat(log.toString())
                        .as("groups across hosts, shm inside each")
                        .contains("tcp across 2 hosts, shm inside each");
                if (done.stream().anyMatch(d -> d.kind() == Kind.SHM_FULL)) {
                    assertThat(shmFailures)
                            .as("full folders a worker said it could not run shm in")
                            .isPositive();
                }
            }
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                p.signal("CONT");
                p.close();
            }
            keepLogs(layout);
        }
    }

    /** Copies every process's log to target/chaos-LAYOUT-logs, for the report's reader. */
    private void keepLogs(Layout layout) throws IOException {
        Path kept = Path.of("target", "chaos-" + layout.name().toLowerCase(Locale.ROOT) + "-logs");
        Files.createDirectories(kept);
        try (Stream<Path> logs = Files.list(dir)) {
            for (Path log : logs.filter(p -> p.toString().endsWith(".log")).toList()) {
                Files.copy(
                        log, kept.resolve(log.getFileName()), StandardCopyOption.REPLACE_EXISTING);
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

    /** Starts rank {@code r}'s worker, logging to {@code name}.log. */
    private interface WorkerStart {
        CliProcess start(int r, String name) throws IOException;
    }

    private static int count(String text, String part) {
        return text.split(Pattern.quote(part), -1).length - 1;
    }

    /**
     * How often a full folder bit (a worker said it could not run shm, and the group formed without
     * shm on it), and how often the group formed across hosts with shm in all.
     */
    private static String shmReport(Layout layout, List<Fault> faults, int bit, String log) {
        if (layout != Layout.HOSTS) {
            return "";
        }
        long full = faults.stream().filter(f -> f.kind() == Kind.SHM_FULL).count();
        return String.format(
                Locale.ROOT,
                "%nfull shm folders: %d, a worker said it could not run shm after %d;"
                        + " groups formed with shm across hosts: %d%n",
                full,
                bit,
                count(log, "tcp across 2 hosts, shm inside each"));
    }

    private static String report(
            Layout layout, long seed, List<Fault> faults, Instant start, CheckedLoad load) {
        StringBuilder s = new StringBuilder();
        s.append(
                String.format(
                        Locale.ROOT,
                        "## Chaos run (%s): seed %d, %d faults in %d s%n%n",
                        layout,
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
        for (Kind k : layout.kinds()) {
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
