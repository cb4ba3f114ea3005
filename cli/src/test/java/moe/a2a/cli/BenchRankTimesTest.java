package moe.a2a.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import moe.a2a.bench.RankTimes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A bench child's times file reads back as written, with and without an expert stage. */
class BenchRankTimesTest {
    @TempDir Path dir;

    @Test
    void shouldReadBackWhatTheChildWrote() throws Exception {
        RankTimes withExperts =
                new RankTimes(
                        new long[] {5, 6},
                        new long[] {7, 8},
                        new long[] {1},
                        true,
                        new long[] {90, 91});
        RankTimes without = new RankTimes(new long[] {3}, new long[] {4}, new long[] {2}, false);
        for (RankTimes times : new RankTimes[] {withExperts, without}) {
            Path file = dir.resolve("rank-" + times.ok() + ".times");
            BenchRankCommand.write(times, file);
            RankTimes read = BenchRankCommand.read(file);
            assertThat(read.ok()).isEqualTo(times.ok());
            assertThat(read.dispatchNs()).containsExactly(times.dispatchNs());
            assertThat(read.combineNs()).containsExactly(times.combineNs());
            assertThat(read.barrierNs()).containsExactly(times.barrierNs());
            assertThat(read.expertNs()).containsExactly(times.expertNs());
        }
    }
}
