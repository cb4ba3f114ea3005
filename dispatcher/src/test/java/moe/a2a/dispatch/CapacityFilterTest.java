package moe.a2a.dispatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class CapacityFilterTest {

    @Test
    void shouldKeepEachExpertsHighestWeightPairsUpToCapacity() {
        for (long seed = 0; seed < 200; seed++) {
            SplittableRandom random = new SplittableRandom(seed);
            int e = 1 + random.nextInt(12);
            int k = 1 + random.nextInt(Math.min(e, 4));
            int t = random.nextInt(60);
            int capacity = random.nextInt(1 + t * k / e + 2);
            int[] ids =
                    random.nextBoolean()
                            ? TestRoutings.uniform(random, t, e, k)
                            : TestRoutings.concentrated(t, k, random.nextInt(e - k + 1));
            float[] weights = new float[t * k];
            for (int i = 0; i < weights.length; i++) {
                // few distinct values, so ties happen
                weights[i] = random.nextInt(5) / 4f;
            }
            int[] original = ids.clone();
            CapacityFilter filter = new CapacityFilter(e);
            filter.apply(TestRoutings.uniform(random, 70, e, k), new float[70 * k], 70, k, 1);

            int[] kept = filter.apply(ids, weights, t, k, capacity);

            String where = "seed=" + seed;
            assertThat(ids).as(where + ": input untouched").isEqualTo(original);
            int[] expected = bruteForce(ids, weights, e, capacity);
            for (int i = 0; i < t * k; i++) {
                assertThat(kept[i]).as(where + " pair " + i).isEqualTo(expected[i]);
            }
            long[] dropped = filter.droppedPerExpert();
            for (int x = 0; x < e; x++) {
                long count = 0;
                for (int i = 0; i < t * k; i++) {
                    count += ids[i] == x && expected[i] == CapacityFilter.DROPPED ? 1 : 0;
                }
                assertThat(dropped[x]).as(where + " expert " + x).isEqualTo(count);
            }
        }
    }

    @Test
    void shouldKeepEveryPairWhenUnlimited() {
        int[] ids = TestRoutings.concentrated(50, 2, 0);
        int[] kept =
                new CapacityFilter(4).apply(ids, new float[100], 50, 2, CapacityFilter.UNLIMITED);
        assertThat(Arrays.copyOf(kept, 100)).isEqualTo(ids);
    }

    /** Per expert: its pairs by weight, highest first, then by index; the first capacity kept. */
    private static int[] bruteForce(int[] ids, float[] weights, int experts, int capacity) {
        int[] out = ids.clone();
        for (int x = 0; x < experts; x++) {
            List<Integer> pairs = new ArrayList<>();
            for (int i = 0; i < ids.length; i++) {
                if (ids[i] == x) {
                    pairs.add(i);
                }
            }
            pairs.sort(
                    Comparator.comparingDouble((Integer i) -> -weights[i])
                            .thenComparingInt(i -> i));
            for (int j = capacity; j < pairs.size(); j++) {
                out[pairs.get(j)] = CapacityFilter.DROPPED;
            }
        }
        return out;
    }
}
