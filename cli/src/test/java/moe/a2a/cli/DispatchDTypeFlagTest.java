package moe.a2a.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * {@code --dispatch-dtype}, {@code --micro-batches} and {@code --expert-ffn} are refused in one
 * line where they cannot run, before anything starts.
 */
class DispatchDTypeFlagTest {

    @Test
    void shouldNameChoicesWhenDispatchDTypeIsUnknown() {
        assertThat(run("bench", "--dispatch-dtype", "fp9"))
                .isEqualTo("moe-a2a bench: --dispatch-dtype: fp9 (expected: one of bf16, fp8)");
    }

    @Test
    void shouldRefuseLowLatencyModeWhereTheBenchCannotRunIt() {
        assertThat(run("bench", "--mode", "fast"))
                .isEqualTo("moe-a2a bench: --mode: fast (expected: one of normal, low-latency)");
        assertThat(run("bench", "--mode", "low-latency", "--scope", "TRANSPORT"))
                .isEqualTo(
                        "moe-a2a bench: --mode: low-latency (expected: normal with --target or"
                                + " --scope TRANSPORT)");
        assertThat(run("bench", "--tokens", "8", "--target", "127.0.0.1:1"))
                .startsWith("moe-a2a bench: --tokens: 8 (expected: 0, or > 0 with a canonical");
    }

    @Test
    void shouldRefuseFp8WhenBenchRunsOnARemoteServer() {
        assertThat(run("bench", "--dispatch-dtype", "fp8", "--target", "127.0.0.1:1"))
                .startsWith("moe-a2a bench: --dispatch-dtype: fp8 (expected: bf16 with --target");
    }

    @Test
    void shouldRefuseMicroBatchesOutOfRangeOrOnNccl() {
        assertThat(run("serve", "--micro-batches", "3", "--port", "0", "--metrics-port", "0"))
                .isEqualTo("moe-a2a serve: --micro-batches: 3 (expected: 1 or 2)");
        assertThat(
                        run(
                                "control-plane",
                                "--transport",
                                "nccl",
                                "--micro-batches",
                                "2",
                                "--hidden",
                                "8",
                                "--ffn",
                                "8",
                                "--port",
                                "0",
                                "--metrics-port",
                                "0"))
                .startsWith(
                        "moe-a2a control-plane: --micro-batches: 2 (expected: 1 with --transport nccl");
    }

    @Test
    void shouldRefuseAnExpertStageWhereItCannotRun() {
        assertThat(run("bench", "--expert-ffn", "8", "--scope", "TRANSPORT"))
                .isEqualTo(
                        "moe-a2a bench: --expert-ffn: 8 (expected: 0, or > 0 with the dispatcher"
                                + " scope, not with --target)");
        assertThat(run("bench", "--expert-ffn", "8", "--target", "127.0.0.1:1"))
                .startsWith("moe-a2a bench: --expert-ffn: 8 (expected:");
        assertThat(run("bench", "--expert-ffn", "-1"))
                .startsWith("moe-a2a bench: --expert-ffn: -1");
        assertThat(run("bench", "--collective", "allreduce", "--expert-ffn", "8"))
                .isEqualTo(
                        "moe-a2a bench: --expert-ffn: not with --collective (workloads and"
                                + " collectives run apart)");
    }

    /** Runs the CLI; returns its error output, after checking that it failed. */
    private static String run(String... args) {
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine().setErr(new PrintWriter(err, true));
        int exit = cli.execute(args);
        assertThat(exit).as(err.toString()).isEqualTo(1);
        return err.toString().strip();
    }
}
