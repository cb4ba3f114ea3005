package moe.a2a.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Where the CUDA and NCCL libraries are taken from: options, then environment, then Python wheels.
 */
class GpuLibrariesTest {
    @TempDir Path dir;

    private Path wheels() throws Exception {
        Path site = dir.resolve("venv/lib/python3.12/site-packages");
        Files.createDirectories(site.resolve("nvidia/nccl/lib"));
        Files.createFile(site.resolve("nvidia/nccl/lib/libnccl.so.2"));
        Files.createDirectories(site.resolve("nvidia/cu13/lib"));
        Files.createFile(site.resolve("nvidia/cu13/lib/libcudart.so.13"));
        Files.createDirectories(site.resolve("nvidia/cublas/lib"));
        return site;
    }

    @Test
    void shouldFindNvidiaWheelsUnderSitePackages() throws Exception {
        Path site = wheels();
        Map<String, String> env = Map.of("VIRTUAL_ENV", dir.resolve("venv").toString());
        List<Path> sites = GpuLibraries.sitePackages(env);
        assertThat(sites).contains(site);
        GpuLibraries libs = GpuLibraries.resolve(null, null, env, sites);
        assertThat(libs.ncclDirs()).containsExactly(site.resolve("nvidia/nccl/lib"));
        // the empty cublas folder holds no library and is skipped
        assertThat(libs.cudaDirs()).containsExactly(site.resolve("nvidia/cu13/lib"));
        assertThat(libs.origin()).isEqualTo("cuda from wheels, nccl from wheels");
    }

    @Test
    void shouldPreferOptionsThenEnvironmentOverWheels() throws Exception {
        Path site = wheels();
        Path cudaOpt = Files.createDirectories(dir.resolve("cuda-opt"));
        Path ncclEnv = Files.createDirectories(dir.resolve("nccl-env"));
        GpuLibraries libs =
                GpuLibraries.resolve(
                        cudaOpt,
                        null,
                        Map.of(GpuLibraries.NCCL_ENV, ncclEnv.toString()),
                        List.of(site));
        assertThat(libs.cudaDirs()).containsExactly(cudaOpt);
        assertThat(libs.ncclDirs()).containsExactly(ncclEnv);
        assertThat(libs.describe())
                .contains("cuda from --cuda-lib-dir")
                .contains("nccl from MOE_A2A_NCCL_LIB_DIR");
    }

    @Test
    void shouldNameTheSettingWhenDirectoryIsMissing() {
        assertThatThrownBy(
                        () -> GpuLibraries.resolve(null, dir.resolve("nope"), Map.of(), List.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--nccl-lib-dir: ")
                .hasMessageContaining("libnccl.so.2");
        assertThatThrownBy(
                        () ->
                                GpuLibraries.resolve(
                                        null,
                                        null,
                                        Map.of(
                                                GpuLibraries.CUDA_ENV,
                                                dir.resolve("nope").toString()),
                                        List.of()))
                .hasMessageContaining("MOE_A2A_CUDA_LIB_DIR: ")
                .hasMessageContaining("libcudart.so.13");
    }

    @Test
    void shouldFallBackToSystemPathsWhenNothingIsFound() {
        GpuLibraries libs = GpuLibraries.resolve(null, null, Map.of(), List.of(dir));
        assertThat(libs.cudaDirs()).isEmpty();
        assertThat(libs.ncclDirs()).isEmpty();
        assertThat(libs.describe()).isEqualTo("cuda=(system) nccl=(system) [system default paths]");
    }
}
