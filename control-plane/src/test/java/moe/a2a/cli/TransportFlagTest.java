package moe.a2a.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code --transport} takes one type everywhere; each command refuses those it cannot run. */
class TransportFlagTest {

    @Test
    void shouldRefuseNcclWhenBenchRunsHere() {
        assertThat(run(1, "bench", "--transport", "local,nccl"))
                .startsWith("moe-a2a bench: --transport: nccl (expected: local, tcp;");
    }

    @Test
    void shouldRefuseLocalWhenControlPlaneNeedsWorkers() {
        assertThat(run(1, "control-plane", "--transport", "local", "--port", "0"))
                .startsWith("moe-a2a control-plane: --transport: local (expected: tcp, nccl;");
    }

    @Test
    void shouldRefuseLocalWhenWorkerJoins() {
        assertThat(run(1, "worker", "--control-plane", "127.0.0.1:1", "--transport", "local"))
                .startsWith("moe-a2a worker: --transport: local (expected: auto, tcp or nccl;");
    }

    @Test
    void shouldRefuseShmWhenWorkerJoinsUntilWorkersRunIt() {
        assertThat(run(1, "worker", "--control-plane", "127.0.0.1:1", "--transport", "shm"))
                .startsWith("moe-a2a worker: --transport: shm (expected: auto, tcp or nccl;")
                .contains("not yet supported by worker processes");
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
