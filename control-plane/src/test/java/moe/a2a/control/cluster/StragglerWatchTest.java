package moe.a2a.control.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class StragglerWatchTest {
    static final int N = 4;
    static final int WINDOW = 8;

    /**
     * Rank {@code slow} takes {@code extraMs} longer than the others each step, so every other rank
     * waits that long for its rows (plus noise); it waits on nobody. Returns the ranks the window
     * newly flagged.
     */
    private static int[] steps(
            StragglerWatch watch, SplittableRandom random, int slow, long extraMs) {
        int[] newly = new int[0];
        for (int step = 0; step < WINDOW; step++) {
            for (int r = 0; r < N; r++) {
                long[] dispatch = new long[N];
                long[] combine = new long[N];
                for (int p = 0; p < N; p++) {
                    if (p != r) {
                        dispatch[p] = random.nextLong(200_000);
                        combine[p] = random.nextLong(200_000);
                    }
                }
                if (slow >= 0 && r != slow) {
                    dispatch[slow] += extraMs * 1_000_000;
                }
                int[] flagged = watch.onWaits(r, dispatch, combine, N);
                if (flagged.length > 0) {
                    newly = flagged;
                }
            }
        }
        return newly;
    }

    @Test
    void shouldFlagTheRankEveryOtherWaitsOnAndClearItOnceItKeepsUp() {
        SplittableRandom random = new SplittableRandom(3);
        StragglerWatch watch =
                new StragglerWatch(new StragglerWatch.Settings(3, WINDOW, false), N, null);
        steps(watch, random, -1, 0);
        for (int r = 0; r < N; r++) {
            assertThat(watch.flagged(r)).as("rank %d, all even", r).isFalse();
        }
        assertThat(steps(watch, random, 2, 20)).as("newly flagged").containsExactly(2);
        for (int r = 0; r < N; r++) {
            assertThat(watch.flagged(r)).as("rank %d, rank 2 slow", r).isEqualTo(r == 2);
        }
        assertThat(steps(watch, random, -1, 0)).isEmpty();
        assertThat(watch.flagged(2)).as("rank 2 keeps up again").isFalse();
    }

    @Test
    void shouldFlagNoneForWaitsUnderAMillisecondOrInAGroupOfTwo() {
        SplittableRandom random = new SplittableRandom(5);
        StragglerWatch watch =
                new StragglerWatch(new StragglerWatch.Settings(3, WINDOW, false), N, null);
        // 0.9 ms a step on rank 1 is far above the others' ~0.2 ms, but noise in absolute terms
        for (int step = 0; step < WINDOW; step++) {
            for (int r = 0; r < N; r++) {
                long[] dispatch = new long[N];
                if (r != 1) {
                    dispatch[1] = 900_000;
                }
                watch.onWaits(r, dispatch, new long[N], N);
            }
        }
        assertThat(watch.flagged(1)).isFalse();

        StragglerWatch two =
                new StragglerWatch(new StragglerWatch.Settings(3, WINDOW, false), 2, null);
        for (int step = 0; step < WINDOW; step++) {
            two.onWaits(0, new long[] {0, 50_000_000}, new long[2], 2);
            two.onWaits(1, new long[2], new long[2], 2);
        }
        assertThat(two.flagged(1)).isFalse();
    }

    @Test
    void shouldNameTheFlagOfABadSetting() {
        assertThatThrownBy(() -> new StragglerWatch.Settings(1, 8, false))
                .hasMessageContaining("--straggler-factor: 1.0");
        assertThatThrownBy(() -> new StragglerWatch.Settings(Double.NaN, 8, false))
                .hasMessageContaining("--straggler-factor");
        assertThatThrownBy(() -> new StragglerWatch.Settings(3, 0, false))
                .hasMessageContaining("--straggler-window: 0");
        assertThatThrownBy(() -> new StragglerWatch.Settings(3, 8, true, 999_999_999L))
                .hasMessageContaining("--straggler-eviction: PT0.999999999S");
        assertThatThrownBy(() -> new StragglerWatch.Settings(3, 8, true, 601_000_000_000L))
                .hasMessageContaining("--straggler-eviction: PT10M1S");
    }
}
