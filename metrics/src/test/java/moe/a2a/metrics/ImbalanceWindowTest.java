package moe.a2a.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The windowed imbalance against a plain recount of the last steps. */
class ImbalanceWindowTest {
    @Test
    void shouldEqualRecountOfLastStepsWhenStepsAreRandom() {
        long seed = 77;
        SplittableRandom random = new SplittableRandom(seed);
        int steps = 5;
        int width = 6;
        ImbalanceWindow window = new ImbalanceWindow(steps, width);
        List<long[]> history = new ArrayList<>();
        for (int step = 0; step < 40; step++) {
            long[] counts = new long[width];
            for (int i = 0; i < width; i++) {
                counts[i] = random.nextInt(4) == 0 ? 0 : random.nextInt(1, 100);
            }
            history.add(counts);
            long[] sums = new long[width];
            for (int s = Math.max(0, history.size() - steps); s < history.size(); s++) {
                for (int i = 0; i < width; i++) {
                    sums[i] += history.get(s)[i];
                }
            }
            assertThat(window.add(counts))
                    .as("seed=%d step=%d", seed, step)
                    .isEqualTo(Imbalance.maxOverMean(sums));
        }
    }
}
