package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import moe.a2a.cli.JvmOptions;

/**
 * A child process of the built CLI jar (or any command), its output captured to a file that a
 * failing test attaches. Closing it kills it and waits, so no process outlives a test.
 */
final class CliProcess implements AutoCloseable {
    /** Ports {@link #freePort} handed out. */
    private static final Set<Integer> HANDED_OUT = ConcurrentHashMap.newKeySet();

    private static final Pattern SERVING = Pattern.compile("serving on port (\\d+)");
    private static final Pattern CLUSTER = Pattern.compile("cluster port (\\d+)");

    private final Process process;
    private final Path log;

    private CliProcess(Process process, Path log) {
        this.process = process;
        this.log = log;
    }

    /** Starts {@code java -jar moe-a2a.jar args...}. */
    static CliProcess moeA2a(Path dir, String name, String... args) throws IOException {
        return moeA2a(dir, name, List.of(), args);
    }

    /** Starts {@code java JVM-OPTIONS -jar moe-a2a.jar args...}. */
    static CliProcess moeA2a(Path dir, String name, List<String> jvmOptions, String... args)
            throws IOException {
        List<String> command = JvmOptions.childCommand("-Xmx1g");
        command.addAll(ClassArchive.options());
        command.addAll(jvmOptions);
        command.addAll(List.of("-jar", jar()));
        command.addAll(List.of(args));
        return start(dir, name, command);
    }

    /** Starts {@code PREFIX... java -jar moe-a2a.jar args...}: in a network namespace, say. */
    static CliProcess moeA2aUnder(List<String> prefix, Path dir, String name, String... args)
            throws IOException {
        List<String> command = new ArrayList<>(prefix);
        command.addAll(JvmOptions.childCommand("-Xmx1g"));
        command.addAll(ClassArchive.options());
        command.addAll(List.of("-jar", jar()));
        command.addAll(List.of(args));
        return start(dir, name, command);
    }

    /**
     * {@code control-plane} serving clients on {@code port} and workers on {@code clusterPort} with
     * {@code worldSize} ranks, then {@code flags} (the model's, the metrics port, timeouts).
     */
    static CliProcess controlPlane(
            Path dir,
            String name,
            List<String> jvmOptions,
            int port,
            int clusterPort,
            int worldSize,
            List<String> flags)
            throws IOException {
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "control-plane",
                                "--port",
                                Integer.toString(port),
                                "--cluster-port",
                                Integer.toString(clusterPort),
                                "--world-size",
                                Integer.toString(worldSize)));
        args.addAll(flags);
        return moeA2a(dir, name, jvmOptions, args.toArray(String[]::new));
    }

    /**
     * A TCP worker named {@code worker-RANK} that joins the control plane's cluster port {@code
     * port}.
     */
    static CliProcess tcpWorker(Path dir, int port, int rank) throws IOException {
        return moeA2a(
                dir,
                "worker-" + rank,
                "worker",
                "--control-plane",
                "127.0.0.1:" + port,
                "--metrics-port",
                "0",
                "--transport",
                "tcp",
                "--rank",
                Integer.toString(rank));
    }

    static CliProcess start(Path dir, String name, List<String> command) throws IOException {
        Path log = dir.resolve(name + ".log");
        Process p =
                new ProcessBuilder(command)
                        .directory(dir.toFile())
                        .redirectErrorStream(true)
                        .redirectOutput(log.toFile())
                        .start();
        return new CliProcess(p, log);
    }

    /** Polls the log until the server says which port it bound, or fails with the log. */
    int awaitServingPort(Duration timeout) throws Exception {
        return awaitPort(SERVING, timeout);
    }

    /** Polls a control plane's log until it says which cluster port it bound. */
    int awaitClusterPort(Duration timeout) throws Exception {
        return awaitPort(CLUSTER, timeout);
    }

    private int awaitPort(Pattern said, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            Matcher m = said.matcher(output());
            if (m.find()) {
                return Integer.parseInt(m.group(1));
            }
            if (!process.isAlive()) {
                throw new AssertionError(
                        "server exited with " + process.exitValue() + ":\n" + output());
            }
            Thread.sleep(50);
        }
        throw new AssertionError("server did not start within " + timeout + ":\n" + output());
    }

    /** Polls the log until it holds {@code text}, or fails with the log. */
    void awaitOutput(String text, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (output().contains(text)) {
                return;
            }
            Thread.sleep(50);
        }
        throw new AssertionError("no \"" + text + "\" within " + timeout + ":\n" + output());
    }

    /** Waits for exit; returns the exit code, or fails with the log on timeout. */
    int awaitExit(Duration timeout) throws Exception {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("process did not finish within " + timeout + ":\n" + output());
        }
        return process.exitValue();
    }

    /** SIGTERM, as an orchestrator stops a process; returns at once. */
    void terminate() {
        process.destroy();
    }

    /** SIGKILL, as a crashed or OOM-killed process would die. */
    void kill() throws InterruptedException {
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }

    /** Sends signal {@code name} (STOP, CONT, ...) with kill(1). */
    void signal(String name) throws IOException, InterruptedException {
        new ProcessBuilder("kill", "-" + name, Long.toString(process.pid()))
                .redirectErrorStream(true)
                .start()
                .waitFor(10, TimeUnit.SECONDS);
    }

    long pid() {
        return process.pid();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    String output() throws IOException {
        return Files.readString(log, StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    /**
     * A worker named {@code name} that offers every data plane it can ({@code --transport auto}),
     * shm in {@code shmDir}, and asks the control plane's cluster port {@code clusterPort} for
     * {@code rank}.
     */
    static CliProcess shmWorker(Path dir, String name, int clusterPort, int rank, Path shmDir)
            throws IOException {
        return moeA2a(
                dir,
                name,
                "worker",
                "--control-plane",
                "127.0.0.1:" + clusterPort,
                "--metrics-port",
                "0",
                "--transport",
                "auto",
                "--shm-dir",
                shmDir.toString(),
                "--rank",
                Integer.toString(rank));
    }

    /**
     * Runs {@code client} against {@code port} for six checked requests of 24 tokens and asserts
     * that it exits 0 with every answer equal to the reference.
     */
    static void checkSixAnswers(Path dir, String name, int port) throws Exception {
        try (CliProcess client =
                moeA2a(
                        dir,
                        name,
                        "client",
                        "--target",
                        "127.0.0.1:" + port,
                        "--requests",
                        "6",
                        "--tokens",
                        "24",
                        "--verify",
                        "-1")) {
            int exit = client.awaitExit(Duration.ofSeconds(120));
            String out = client.output();
            assertThat(exit).as(out).isZero();
            assertThat(out).contains("checked 6 answers against the reference: 0 mismatches");
        }
    }

    /** The names of the shm group files in {@code shmDir}. */
    static List<String> shmGroupFiles(Path shmDir) throws IOException {
        try (Stream<Path> files = Files.list(shmDir)) {
            return files.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith("moe-a2a-"))
                    .toList();
        }
    }

    /** Every process's log, one after another, for a failure message. */
    static String logs(List<CliProcess> processes) {
        StringBuilder logs = new StringBuilder();
        for (CliProcess p : processes) {
            try {
                logs.append("\n---\n").append(p.output());
            } catch (IOException e) {
                logs.append("\n---\n(log unreadable: ").append(e).append(')');
            }
        }
        return logs.toString();
    }

    /**
     * A port free right now on this machine, for a server that must be told its port up front, and
     * not handed out before by this JVM: the OS may offer a port again as soon as it is closed,
     * before the process it was meant for has taken it.
     */
    static int freePort() throws IOException {
        while (true) {
            try (ServerSocket s = new ServerSocket(0)) {
                s.setReuseAddress(true);
                if (HANDED_OUT.add(s.getLocalPort())) {
                    return s.getLocalPort();
                }
            }
        }
    }

    static String jar() {
        String jar = System.getProperty("moe.a2a.it.jar");
        if (jar == null || !Files.isRegularFile(Path.of(jar))) {
            throw new IllegalStateException(
                    "moe.a2a.it.jar: " + jar + " (expected: the built CLI jar; run ./mvnw verify)");
        }
        return jar;
    }

    /** Polls gRPC health of MoeService until it is {@code wanted}, or fails with every log. */
    static void awaitHealth(
            ManagedChannel channel,
            ServingStatus wanted,
            Duration timeout,
            List<CliProcess> processes)
            throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        ServingStatus last = null;
        while (System.nanoTime() < deadline) {
            try {
                last =
                        HealthGrpc.newBlockingStub(channel)
                                .withDeadlineAfter(2, TimeUnit.SECONDS)
                                .check(
                                        HealthCheckRequest.newBuilder()
                                                .setService("moe.a2a.v1.MoeService")
                                                .build())
                                .getStatus();
                if (last == wanted) {
                    return;
                }
            } catch (StatusRuntimeException e) {
                last = null;
            }
            Thread.sleep(50);
        }
        StringBuilder logs = new StringBuilder();
        for (CliProcess p : processes) {
            logs.append("\n---\n").append(p.output());
        }
        throw new AssertionError(
                "health " + last + " (expected: " + wanted + ") after " + timeout + logs);
    }
}
