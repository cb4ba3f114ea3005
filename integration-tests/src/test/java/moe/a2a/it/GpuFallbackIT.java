package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Machines without a GPU, as the CLI shows them: {@code doctor} says why there is no GPU data
 * plane, {@code worker --transport nccl} fails fast with that reason, {@code auto} offers tcp and
 * says so, and a control plane that asks for nccl refuses such a worker naming both.
 */
@Timeout(120)
class GpuFallbackIT {
    @TempDir Path dir;

    @BeforeEach
    void noGpuHere() {
        assumeFalse(Files.exists(Path.of("/dev/nvidiactl")), "this machine has an NVIDIA driver");
    }

    @Test
    void shouldExplainMissingGpuInDoctor() throws Exception {
        try (CliProcess doctor = CliProcess.moeA2a(dir, "doctor", "doctor")) {
            assertThat(doctor.awaitExit(Duration.ofSeconds(60))).isZero();
            assertThat(doctor.output())
                    .contains(
                            "gpu probe:  no GPU data plane: /dev/nvidiactl does not exist (no NVIDIA driver)")
                    .contains("worker --transport auto offers tcp");
        }
    }

    @Test
    void shouldFailFastWhenNcclIsRequested() throws Exception {
        try (CliProcess worker =
                CliProcess.moeA2a(
                        dir,
                        "worker",
                        "worker",
                        "--control-plane",
                        "127.0.0.1:1",
                        "--transport",
                        "nccl",
                        "--metrics-port",
                        "0")) {
            assertThat(worker.awaitExit(Duration.ofSeconds(60))).isEqualTo(2);
            assertThat(worker.output())
                    .contains("--transport nccl: no GPU data plane: /dev/nvidiactl does not exist");
        }
    }

    @Test
    void shouldRefuseCpuWorkerInNcclCluster() throws Exception {
        try (CliProcess cp =
                CliProcess.moeA2a(
                        dir,
                        "control-plane",
                        "control-plane",
                        "--transport",
                        "nccl",
                        "--world-size",
                        "1",
                        "--port",
                        "0",
                        "--cluster-port",
                        "0",
                        "--metrics-port",
                        "0",
                        "--hidden",
                        "32",
                        "--ffn",
                        "32")) {
            cp.awaitServingPort(Duration.ofSeconds(60));
            int port = cp.awaitClusterPort(Duration.ofSeconds(1));
            try (CliProcess worker =
                    CliProcess.moeA2a(
                            dir,
                            "worker",
                            "worker",
                            "--control-plane",
                            "127.0.0.1:" + port,
                            "--metrics-port",
                            "0")) {
                assertThat(worker.awaitExit(Duration.ofSeconds(60))).isEqualTo(1);
                assertThat(worker.output())
                        .containsPattern(
                                "--transport auto: offering \\[tcp(, shm)?\\] to the control plane \\(no"
                                        + " GPU data plane here")
                        .containsPattern(
                                "moe-a2a worker: control plane refused this worker: join.transports:"
                                        + " \\[tcp(, shm)?\\] \\(expected: nccl, this cluster's data"
                                        + " plane\\); the worker's GPU probe: no GPU data plane");
            }
        }
    }
}
