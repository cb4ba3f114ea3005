package moe.a2a.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import moe.a2a.testing.TestCertificates;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
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

    @Test
    void shouldRefuseAFlowControlWindowBelowOneFrame() {
        assertThat(
                        run(
                                "serve",
                                "--flow-control-window",
                                "1000",
                                "--port",
                                "0",
                                "--metrics-port",
                                "0"))
                .isEqualTo(
                        "moe-a2a serve: --flow-control-window: 1000 (expected: at least 16384"
                                + " bytes)");
    }

    @Test
    void shouldRefusePlaintextBeyondLoopbackUnlessAskedFor() {
        assertThat(run("serve", "--host", "0.0.0.0", "--port", "0", "--metrics-port", "0"))
                .isEqualTo(
                        "moe-a2a serve: --host 0.0.0.0: not a loopback address, and no --tls-cert"
                                + " (expected: --tls-cert and --tls-key, or --plaintext to serve"
                                + " unencrypted)");
    }

    @Test
    void shouldSayWhichTlsFileIsMissing(@TempDir Path dir) throws Exception {
        TestCertificates.Leaf leaf = TestCertificates.authority("ca").issue(dir, "server");
        String cert = leaf.certificate().toString();
        String key = leaf.key().toString();
        assertThat(run("control-plane", "--tls-cert", cert, "--tls-key", key, "--port", "0"))
                .isEqualTo(
                        "moe-a2a control-plane: --tls-ca: missing (expected: the authority of the"
                                + " workers' certificates, for mutual TLS on the cluster port)");
        assertThat(run("serve", "--tls-cert", cert, "--port", "0", "--metrics-port", "0"))
                .isEqualTo(
                        "moe-a2a serve: --tls-cert: given alone (expected: --tls-cert and --tls-key"
                                + " together)");
        assertThat(run("serve", "--tls-cert", cert, "--tls-key", key, "--plaintext", "--port", "0"))
                .isEqualTo(
                        "moe-a2a serve: --plaintext: given with --tls-cert (expected: one or the"
                                + " other)");
        assertThat(run("worker", "--control-plane", "127.0.0.1:1", "--tls-ca", cert))
                .startsWith(
                        "moe-a2a worker: --tls-cert: missing (expected: --tls-cert, --tls-key"
                                + " and --tls-ca together");
    }

    @Test
    void shouldNameTheLineOfABadTokenFile(@TempDir Path dir) throws Exception {
        Path tokens =
                Files.writeString(
                        dir.resolve("tokens"),
                        "# roles\nclient 0123456789abcdef0123\nadmin 0123456789abcdef0123\n");
        assertThat(run("serve", "--auth-token-file", tokens.toString(), "--port", "0"))
                .isEqualTo(
                        "moe-a2a serve: --auth-token-file "
                                + tokens
                                + ", line 3: not \"ROLE TOKEN\" (expected: ROLE client or worker,"
                                + " then the token)");
        Files.writeString(tokens, "worker short\n");
        assertThat(run("serve", "--auth-token-file", tokens.toString(), "--port", "0"))
                .isEqualTo(
                        "moe-a2a serve: --auth-token-file "
                                + tokens
                                + ", line 1: a token of 5 characters (expected: at least 16)");
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
