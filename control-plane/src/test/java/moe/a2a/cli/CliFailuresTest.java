package moe.a2a.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/** Failures an operator causes print one line naming the command and the cause, no stack trace. */
@Timeout(60)
class CliFailuresTest {

    @Test
    void shouldSayInOneLineThatThePortIsTaken() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            String err =
                    run(
                            "serve",
                            "--host",
                            "127.0.0.1",
                            "--port",
                            Integer.toString(taken.getLocalPort()),
                            "--metrics-port",
                            "0",
                            "--experts",
                            "4",
                            "--hidden",
                            "16",
                            "--ffn",
                            "16",
                            "--world-size",
                            "2");
            assertThat(err)
                    .startsWith("moe-a2a serve: Failed to bind to address")
                    .contains("Address already in use")
                    .doesNotContain("\n");
        }
    }

    @Test
    void shouldSayInOneLineThatTheServerIsOutOfReach() throws Exception {
        int port = closedPort();
        assertThat(run("client", "--target", "127.0.0.1:" + port, "--requests", "1"))
                .startsWith("moe-a2a client: UNAVAILABLE: io exception")
                .contains("Connection refused")
                .doesNotContain("\n");
    }

    @Test
    void shouldSayInOneLineThatTheControlPlaneStayedOutOfReach() throws Exception {
        int port = closedPort();
        assertThat(
                        run(
                                "worker",
                                "--control-plane",
                                "127.0.0.1:" + port,
                                "--metrics-port",
                                "0",
                                "--rejoin-timeout",
                                "PT1S"))
                .startsWith("moe-a2a worker: control plane unreachable for PT1S: UNAVAILABLE")
                .contains("Connection refused")
                .doesNotContain("\n");
    }

    /** A port nothing listens on (just closed). */
    private static int closedPort() throws Exception {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** Runs the CLI, which must fail with exit status 1; returns its error output. */
    private static String run(String... args) {
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine().setErr(new PrintWriter(err, true));
        int exit = cli.execute(args);
        assertThat(exit).as(err.toString()).isEqualTo(1);
        return err.toString().strip();
    }
}
