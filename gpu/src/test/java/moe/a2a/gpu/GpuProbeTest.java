package moe.a2a.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The probe on a machine without a GPU: a clean "no", with the reason, and no crash. */
class GpuProbeTest {
    @TempDir Path dir;

    @Test
    void shouldAnswerNoGpuInstantlyWhenDriverNodeIsAbsent() {
        GpuProbe.Result r =
                GpuProbe.probe(
                        new GpuLibraries(List.of(), List.of(), "test"), dir.resolve("nvidiactl"));
        assertThat(r.usable()).isFalse();
        assertThat(r.cudaLoaded()).isFalse();
        assertThat(r.reason()).contains("nvidiactl does not exist (no NVIDIA driver)");
        assertThat(r.describe()).startsWith("no GPU data plane: ").contains("cudart not loaded");
        assertThat(r.tookNanos()).isLessThan(1_000_000_000L);
    }

    @Test
    void shouldReportWhyCudartDidNotLoadInsteadOfCrashing() throws Exception {
        // A driver node that exists, on a machine without the CUDA runtime: the load path runs and
        // fails.
        Path node = Files.createFile(dir.resolve("nvidiactl"));
        GpuProbe.Result r = GpuProbe.probe(new GpuLibraries(List.of(), List.of(), "test"), node);
        if (r.cudaLoaded()) {
            // a machine with CUDA installed: whatever it found, the answer is consistent
            assertThat(r.usable()).isEqualTo(r.reason().isEmpty());
            return;
        }
        assertThat(r.usable()).isFalse();
        assertThat(r.reason()).startsWith("cudart did not load: ");
        assertThat(r.describe()).contains("no GPU data plane");
    }

    @Test
    void shouldFormatNcclVersionCodes() {
        assertThat(GpuProbe.versionString(22903)).isEqualTo("2.29.3");
        assertThat(GpuProbe.versionString(21400)).isEqualTo("2.14.0");
        GpuProbe.Result ok = new GpuProbe.Result(true, 1, true, 22805, "", 2_500_000);
        assertThat(ok.usable()).isTrue();
        assertThat(ok.describe()).isEqualTo("GPU: 1 CUDA device(s), NCCL 2.28.5 (probe 2.5 ms)");
    }
}
