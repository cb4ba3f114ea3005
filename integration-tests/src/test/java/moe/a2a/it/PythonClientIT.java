package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A client written by someone else, in Python from the .proto files alone, writes its own
 * safetensors weights, has {@code serve} load them, and checks the answers with numpy. Needs
 * Debian's python3-grpcio, python3-protobuf, python3-numpy and protobuf-compiler; {@code .ci/run}
 * installs them and sets {@code MOE_A2A_IT_REQUIRE_PYTHON=1} so that CI fails instead of skipping.
 */
@Timeout(300)
class PythonClientIT {
    private static final String PYTHON = "/usr/bin/python3";

    @TempDir Path dir;

    @Test
    void shouldGiveForeignClientTheAnswerOfItsOwnWeights() throws Exception {
        requirePython();
        Path script = Path.of("src/test/python/forward_client.py").toAbsolutePath();
        Path weights = dir.resolve("python-weights.safetensors");
        try (CliProcess write =
                CliProcess.start(
                        dir,
                        "write",
                        List.of(PYTHON, script.toString(), "write-weights", weights.toString()))) {
            assertThat(write.awaitExit(Duration.ofSeconds(60))).as(write.output()).isZero();
        }
        try (CliProcess serve =
                CliProcess.moeA2a(
                        dir,
                        "serve",
                        "serve",
                        "--port",
                        "0",
                        "--metrics-port",
                        "0",
                        "--weights",
                        weights.toString(),
                        "--world-size",
                        "3")) {
            int port = serve.awaitServingPort(Duration.ofSeconds(60));
            try (CliProcess check =
                    CliProcess.start(
                            dir,
                            "check",
                            List.of(
                                    PYTHON,
                                    script.toString(),
                                    "check",
                                    "127.0.0.1:" + port,
                                    weights.toString(),
                                    System.getProperty("moe.a2a.it.proto")))) {
                int exit = check.awaitExit(Duration.ofSeconds(120));
                assertThat(exit).as(check.output()).isZero();
                assertThat(check.output()).contains("all answers match the numpy reference");
            }
        }
    }

    /**
     * Checkpoint directories the Python side writes from the formats alone (DeepSeek-V3 with FP8
     * experts and a shared expert; DeepSeek-V2 with its softmax group-limited gate; Qwen2-MoE with
     * a gated shared expert and a dense layer), served by {@code serve --model}, checked through
     * Forward and Route on every MoE layer with numpy.
     */
    @ParameterizedTest
    @ValueSource(strings = {"deepseek_v3", "deepseek_v2", "qwen2_moe", "qwen3_moe", "mixtral"})
    void shouldServeCheckpointDirectoriesAsNumpyComputesThem(String arch) throws Exception {
        requirePython();
        Path script = Path.of("src/test/python/checkpoint_client.py").toAbsolutePath();
        Path model = dir.resolve(arch);
        try (CliProcess write =
                CliProcess.start(
                        dir,
                        "write-" + arch,
                        List.of(PYTHON, script.toString(), "write", arch, model.toString()))) {
            assertThat(write.awaitExit(Duration.ofSeconds(60))).as(write.output()).isZero();
        }
        try (CliProcess serve =
                CliProcess.moeA2a(
                        dir,
                        "serve-" + arch,
                        "serve",
                        "--port",
                        "0",
                        "--metrics-port",
                        "0",
                        "--model",
                        model.toString(),
                        "--world-size",
                        "3")) {
            int port = serve.awaitServingPort(Duration.ofSeconds(60));
            try (CliProcess check =
                    CliProcess.start(
                            dir,
                            "check-" + arch,
                            List.of(
                                    PYTHON,
                                    script.toString(),
                                    "check",
                                    "127.0.0.1:" + port,
                                    model.toString(),
                                    System.getProperty("moe.a2a.it.proto")))) {
                int exit = check.awaitExit(Duration.ofSeconds(120));
                assertThat(exit).as(check.output()).isZero();
                assertThat(check.output()).contains("match the numpy reference over MoE layers");
            }
        }
    }

    /** Skips without Python's packages, unless CI asks for them (then it fails). */
    private static void requirePython() throws Exception {
        boolean available = pythonReady();
        if ("1".equals(System.getenv("MOE_A2A_IT_REQUIRE_PYTHON"))) {
            assertThat(available)
                    .as("python3 with grpc and numpy, and protoc (see .ci/run)")
                    .isTrue();
        }
        assumeTrue(available, "python3-grpcio, python3-numpy or protoc missing");
    }

    private static boolean pythonReady() throws Exception {
        if (!Files.isExecutable(Path.of(PYTHON))) {
            return false;
        }
        Process p =
                new ProcessBuilder(
                                PYTHON,
                                "-c",
                                "import grpc, numpy, google.protobuf; import shutil, sys; "
                                        + "sys.exit(0 if shutil.which('protoc') else 1)")
                        .redirectErrorStream(true)
                        .start();
        return p.waitFor() == 0;
    }
}
