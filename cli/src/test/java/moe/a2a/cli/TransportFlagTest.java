package moe.a2a.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code --transport} takes one type everywhere; each command refuses those it cannot run. */
class TransportFlagTest {

    @Test
    void shouldRefuseNcclWhenBenchRunsHere() {
        assertThat(run(1, "bench", "--transport", "local,nccl"))
                .startsWith("moe-a2a bench: --transport: nccl (expected: local, tcp, shm;");
    }

    @Test
    void shouldRefuseLocalWhenControlPlaneNeedsWorkers() {
        assertThat(run(1, "control-plane", "--transport", "local", "--port", "0"))
                .startsWith(
                        "moe-a2a control-plane: --transport: local (expected: auto, tcp, nccl, shm;");
    }

    @Test
    void shouldRefuseLocalWhenWorkerJoins() {
        assertThat(run(1, "worker", "--control-plane", "127.0.0.1:1", "--transport", "local"))
                .startsWith(
                        "moe-a2a worker: --transport: local (expected: auto, tcp, shm or nccl;");
    }

    @Test
    void shouldExitAtOnceWhenShmDirectoryIsMissing() {
        PrintStream saved = System.err;
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            run(
                    2,
                    "worker",
                    "--control-plane",
                    "127.0.0.1:1",
                    "--transport",
                    "shm",
                    "--shm-dir",
                    "/nonexistent-moe-a2a-shm");
        } finally {
            System.setErr(saved);
        }
        assertThat(err.toString(StandardCharsets.UTF_8))
                .contains(
                        "--transport shm: --shm-dir: /nonexistent-moe-a2a-shm is not a directory");
    }

    @Test
    void shouldRefuseUnknownControlPlaneTransport() {
        assertThat(run(1, "control-plane", "--transport", "udp", "--port", "0"))
                .contains("--transport: udp (expected: one of auto, tcp, nccl, shm)");
    }

    @Test
    void shouldNameLabelsWhenTransportIsUnknown() {
        assertThat(run(2, "bench", "--transport", "tcpx"))
                .contains("transport: tcpx (expected: one of local, tcp, nccl, shm)");
    }

    /** Runs the CLI; returns its error output, after checking its exit status. */
    private static String run(int expectedExit, String... args) {
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine().setErr(new PrintWriter(err, true));
        int exit = cli.execute(args);
        assertThat(exit).as(err.toString()).isEqualTo(expectedExit);
        return err.toString().strip();
    }
}
