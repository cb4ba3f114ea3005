package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The image built from scratch ({@code deploy/container/build-image.sh}) and run as a cluster: a
 * control plane and two workers as containers on a podman network (non-root, read-only root
 * filesystem), a client on the host checking answers against the reference, a worker killed and
 * started again, and answers checked again. Needs podman with the runc runtime; {@code .ci/run}
 * installs it and sets {@code MOE_A2A_IT_REQUIRE_PODMAN=1} so that CI fails instead of skipping.
 */
@Timeout(600)
class ContainerIT {
    private static final Path REPO = Path.of("..").toAbsolutePath().normalize();
    private static final String IMAGE = "localhost/moe-a2a-it:latest";
    private final String suffix = UUID.randomUUID().toString().substring(0, 8);
    private final String network = "moe-it-" + suffix;
    private final List<String> containers = new ArrayList<>();

    @TempDir Path dir;

    @Test
    void shouldServeCheckedAnswersFromContainersAndAfterAWorkerRestarts() throws Exception {
        requirePodman();
        podman(
                Duration.ofMinutes(5),
                REPO.resolve("deploy/container/build-image.sh").toString(),
                "--tag",
                IMAGE);
        podman(Duration.ofSeconds(30), "podman", "network", "create", network);
        int port = freePort();
        String cp = "cp-" + suffix;
        run(
                cp,
                List.of("-p", "127.0.0.1:" + port + ":50051"),
                "control-plane",
                "--host",
                "0.0.0.0",
                "--plaintext",
                "--world-size",
                "2",
                "--experts",
                "8",
                "--hidden",
                "256",
                "--ffn",
                "512");
        startWorker("w0-" + suffix, cp);
        startWorker("w1-" + suffix, cp);
        checkAnswers("first", port);

        podman(Duration.ofSeconds(60), "podman", "kill", "w1-" + suffix);
        podman(Duration.ofSeconds(60), "podman", "rm", "-f", "w1-" + suffix);
        startWorker("w1-" + suffix, cp);
        checkAnswers("after the restart", port);
    }

    @AfterEach
    void removeContainers() throws Exception {
        if (!containers.isEmpty()) {
            List<String> rm = new ArrayList<>(List.of("podman", "rm", "-f"));
            rm.addAll(containers);
            exec(Duration.ofSeconds(60), rm);
            exec(Duration.ofSeconds(30), List.of("podman", "network", "rm", "-f", network));
        }
    }

    private void startWorker(String name, String controlPlane) throws Exception {
        run(
                name,
                List.of(),
                "worker",
                "--control-plane",
                controlPlane + ":50061",
                "--data-host",
                name);
    }

    /**
     * Starts a container of the image on the network, as the image's non-root user with a read-only
     * root filesystem and its own /tmp. podman's health-check timer needs systemd, which these
     * machines lack; the client's checks stand in for it.
     */
    private void run(String name, List<String> options, String... args) throws Exception {
        List<String> command =
                new ArrayList<>(
                        List.of(
                                "podman",
                                "run",
                                "--runtime",
                                "runc",
                                "-d",
                                "--name",
                                name,
                                "--hostname",
                                name,
                                "--network",
                                network,
                                "--no-healthcheck",
                                "--read-only",
                                "--tmpfs",
                                "/tmp",
                                "--ulimit",
                                "nofile=4096:4096",
                                "--ulimit",
                                "nproc=4096:4096"));
        command.addAll(options);
        command.add(IMAGE);
        command.addAll(List.of(args));
        containers.add(name);
        assertThat(exec(Duration.ofMinutes(1), command).exit())
                .as(String.join(" ", command))
                .isZero();
    }

    /** The client on the host, retried until the group serves, then every answer checked. */
    private void checkAnswers(String when, int port) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        String last = "";
        while (System.nanoTime() < deadline) {
            try (CliProcess client =
                    CliProcess.moeA2a(
                            dir,
                            "client",
                            "client",
                            "--target",
                            "127.0.0.1:" + port,
                            "--requests",
                            "4",
                            "--tokens",
                            "32",
                            "--verify",
                            "-1")) {
                int exit = client.awaitExit(Duration.ofSeconds(120));
                last = client.output();
                if (exit == 0) {
                    assertThat(last)
                            .as(when)
                            .contains("checked 4 answers against the reference: 0 mismatches");
                    return;
                }
            }
            Thread.sleep(1000);
        }
        throw new AssertionError(when + ": no checked answers within 120 s:\n" + last + logs());
    }

    private String logs() throws Exception {
        StringBuilder out = new StringBuilder();
        for (String c : containers) {
            out.append("\n--- ")
                    .append(c)
                    .append(":\n")
                    .append(exec(Duration.ofSeconds(30), List.of("podman", "logs", c)).output());
        }
        return out.toString();
    }

    private void podman(Duration timeout, String... command) throws Exception {
        Result r = exec(timeout, List.of(command));
        assertThat(r.exit()).as(String.join(" ", command) + ":\n" + r.output()).isZero();
    }

    record Result(int exit, String output) {}

    private Result exec(Duration timeout, List<String> command) throws Exception {
        Path log = Files.createTempFile(dir, "podman", ".log");
        Process p =
                new ProcessBuilder(command)
                        .directory(REPO.toFile())
                        .redirectErrorStream(true)
                        .redirectOutput(log.toFile())
                        .start();
        if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(String.join(" ", command) + ": no exit within " + timeout);
        }
        return new Result(p.exitValue(), Files.readString(log));
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static void requirePodman() throws Exception {
        boolean available;
        try {
            Process p = new ProcessBuilder("podman", "info").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            available = p.waitFor() == 0;
        } catch (IOException e) {
            available = false;
        }
        if ("1".equals(System.getenv("MOE_A2A_IT_REQUIRE_PODMAN"))) {
            assertThat(available).as("podman (see .ci/run)").isTrue();
        }
        assumeTrue(available, "podman missing: the container test is skipped");
    }
}
