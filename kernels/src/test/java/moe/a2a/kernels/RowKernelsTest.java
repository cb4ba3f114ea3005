package moe.a2a.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Which implementation {@link RowKernels} runs: in this JVM (started with the Vector API), and in
 * child JVMs with and without it, watching which classes they load.
 */
class RowKernelsTest {
    @Test
    void shouldRunTheVectorKernelsWhenTheBootLayerHasTheVectorModule() {
        assertThat(RowKernels.vectorized()).isTrue();
        assertThat(RowKernels.implementation())
                .isEqualTo("Vector API, " + VectorKernels.FLOATS.vectorBitSize() + "-bit");
    }

    @Test
    void shouldLoadVectorClassesOnlyWhenTheJvmHasTheVectorModule() throws Exception {
        final Process vector = startProbe(true);
        final Process scalar = startProbe(false);
        final String vectorOutput = finish(vector);
        final String scalarOutput = finish(scalar);

        assertThat(vectorOutput)
                .contains("implementation: Vector API")
                .contains("moe.a2a.kernels.VectorBf16 ")
                .contains("moe.a2a.kernels.VectorFp16 ")
                .contains("moe.a2a.kernels.VectorFp8 ")
                .contains("jdk.incubator.vector.FloatVector ");
        assertThat(scalarOutput)
                .contains(
                        "implementation: scalar (start the JVM with"
                                + " --add-modules=jdk.incubator.vector)")
                .contains("moe.a2a.kernels.ScalarKernels ")
                .doesNotContain("moe.a2a.kernels.Vector")
                .doesNotContain("jdk.incubator.vector.");
    }

    private static Process startProbe(boolean withVectorModule) throws IOException {
        final List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        if (withVectorModule) {
            command.add("--add-modules=jdk.incubator.vector");
        }
        // the probe is short: the interpreter and C1 are enough, and start faster
        command.add("-XX:TieredStopAtLevel=1");
        command.add("-Xlog:class+load=info:stdout");
        command.add("-cp");
        command.add(
                location(RowKernels.class) + File.pathSeparator + location(RowKernelsProbe.class));
        command.add(RowKernelsProbe.class.getName());
        return new ProcessBuilder(command).redirectErrorStream(true).start();
    }

    private static String location(Class<?> type) {
        try {
            return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI())
                    .toString();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String finish(Process process) throws Exception {
        final String output;
        try (InputStream in = process.getInputStream()) {
            output = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("probe exited").isTrue();
        assertThat(process.exitValue()).as(output).isZero();
        return output;
    }
}
