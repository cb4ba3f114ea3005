package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import moe.a2a.cli.JvmOptions;
import org.junit.jupiter.api.Test;

/** Every place that starts a moe-a2a JVM passes the same options as {@link JvmOptions}. */
class JvmOptionsTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

    @Test
    void shouldPassEveryJvmOptionWhenAnyLauncherStartsMoeA2a() throws Exception {
        for (String launcher :
                new String[] {
                    "bin/moe-a2a", "deploy/docker/moe-a2a", "scripts/gpu-check.sh", "pom.xml"
                }) {
            String text = Files.readString(ROOT.resolve(launcher), StandardCharsets.UTF_8);
            assertThat(text).as(launcher).contains(JvmOptions.MOE_A2A);
        }
    }
}
