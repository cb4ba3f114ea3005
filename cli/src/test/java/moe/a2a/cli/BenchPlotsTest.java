package moe.a2a.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.awt.image.BufferedImage;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;
import moe.a2a.bench.BenchReport;
import moe.a2a.bench.BenchScope;
import moe.a2a.bench.RankTimes;
import moe.a2a.comm.local.LocalTransportProvider;
import moe.a2a.workload.BenchWorkload;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BenchPlotsTest {
    @TempDir Path dir;

    @Test
    void shouldDrawLatencyTrafficAndExpertChartsWhenReportsAreGiven() throws Exception {
        BenchWorkload w = new BenchWorkload("tiny", 2, 16, 8, 8, 2, 1.2, false, 42);
        RankTimes times =
                new RankTimes(
                        new long[] {1_000, 3_000},
                        new long[] {2_000, 4_000},
                        new long[] {50, 60},
                        true);
        BenchReport report =
                BenchReport.of(
                        w,
                        LocalTransportProvider.LOCAL,
                        BenchScope.DISPATCHER,
                        List.of(times, times),
                        10.0);
        assertThat(report.dispatchP50Us()).isEqualTo(1.0);
        assertThat(report.combineP90Us()).isEqualTo(4.0);

        BenchPlots.write(dir, List.of(report));

        for (String name : List.of("latency.png", "traffic-tiny.png", "experts-tiny.png")) {
            BufferedImage image = ImageIO.read(dir.resolve(name).toFile());
            assertThat(image).as(name).isNotNull();
            assertThat(image.getWidth()).isEqualTo(1000);
            assertThat(image.getHeight()).isEqualTo(560);
        }
    }
}
