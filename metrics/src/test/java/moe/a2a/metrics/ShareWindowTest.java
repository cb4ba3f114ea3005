package moe.a2a.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class ShareWindowTest {
    @Test
    void shouldGiveTheShareOverTheLastStepsOnly() {
        ShareWindow window = new ShareWindow(4);
        assertThat(window.add(0, 0)).isZero();
        SplittableRandom random = new SplittableRandom(3);
        long[] exchange = new long[20];
        long[] step = new long[20];
        for (int i = 0; i < 20; i++) {
            exchange[i] = random.nextLong(1, 1_000);
            step[i] = exchange[i] + random.nextLong(0, 1_000);
            double share = window.add(exchange[i], step[i]);
            long e = 0;
            long s = 0;
            for (int j = Math.max(0, i - 3); j <= i; j++) {
                e += exchange[j];
                s += step[j];
            }
            assertThat(share).as("step %d", i).isEqualTo((double) e / s);
        }
    }
}
