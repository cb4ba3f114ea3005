package moe.a2a.client;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What a user's build pulls with the client: grpc-java on its shaded Netty, protobuf and the stubs,
 * and none of the server's native or heavy parts. Reads the runtime classpath Maven resolved for
 * this module (maven-dependency-plugin, {@code target/runtime-classpath.txt}).
 */
class ClientDependenciesTest {
    @Test
    void shouldPullNoNativeOrServerLibraries() throws Exception {
        List<String> jars =
                Arrays.stream(
                                Files.readString(Path.of("target/runtime-classpath.txt"))
                                        .strip()
                                        .split(File.pathSeparator))
                        .map(p -> Path.of(p).getFileName().toString())
                        .toList();
        assertThat(jars)
                .anyMatch(j -> j.startsWith("grpc-netty-shaded-"))
                .anyMatch(j -> j.startsWith("moe-a2a-api-"))
                .anyMatch(j -> j.startsWith("protobuf-java-"))
                .noneMatch(j -> j.startsWith("javacpp"))
                .noneMatch(j -> j.startsWith("openblas"))
                .noneMatch(j -> j.startsWith("cuda"))
                .noneMatch(j -> j.startsWith("jfreechart"))
                .noneMatch(j -> j.startsWith("netty-"))
                .noneMatch(j -> j.startsWith("grpc-netty-1") || j.equals("grpc-netty.jar"))
                .noneMatch(j -> j.startsWith("moe-a2a-") && !j.startsWith("moe-a2a-api-"));
    }
}
