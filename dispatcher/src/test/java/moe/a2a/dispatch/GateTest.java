package moe.a2a.dispatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.Comparator;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class GateTest {

    @Test
    void shouldMatchFullSoftmaxWhenRenormalisedOverTopK() {
        for (long seed = 0; seed < 50; seed++) {
            SplittableRandom random = new SplittableRandom(seed);
            int t = 1 + random.nextInt(20);
            int e = 2 + random.nextInt(30);
            int k = 1 + random.nextInt(Math.min(e, 8));
            float[] logits = new float[t * e];
            for (int i = 0; i < logits.length; i++) {
                logits[i] = (float) (random.nextGaussian() * 3);
            }
            int[] ids = new int[t * k];
            float[] weights = new float[t * k];
            Gate.softmaxTopK(logits, t, e, k, ids, weights);
            for (int tok = 0; tok < t; tok++) {
                final int row = tok * e;
                double[] probs = new double[e];
                double sum = 0;
                for (int x = 0; x < e; x++) {
                    probs[x] = Math.exp(logits[row + x]);
                    sum += probs[x];
                }
                for (int x = 0; x < e; x++) {
                    probs[x] /= sum;
                }
                Integer[] order = IntStream.range(0, e).boxed().toArray(Integer[]::new);
                Arrays.sort(
                        order,
                        Comparator.comparingDouble((Integer x) -> -probs[x])
                                .thenComparingInt(x -> x));
                double kept = 0;
                for (int j = 0; j < k; j++) {
                    kept += probs[order[j]];
                }
                for (int j = 0; j < k; j++) {
                    assertThat(ids[tok * k + j])
                            .as("seed=%d token=%d k=%d", seed, tok, j)
                            .isEqualTo(order[j]);
                    assertThat((double) weights[tok * k + j])
                            .as("seed=%d", seed)
                            .isCloseTo(
                                    probs[order[j]] / kept,
                                    org.assertj.core.data.Offset.offset(1e-6));
                }
            }
        }
    }

    @Test
    void shouldPreferLowerExpertWhenLogitsTie() {
        float[] logits = {1f, 2f, 2f, 0f};
        int[] ids = new int[2];
        float[] weights = new float[2];
        Gate.softmaxTopK(logits, 1, 4, 2, ids, weights);
        assertThat(ids).containsExactly(1, 2);
        assertThat(weights).containsExactly(0.5f, 0.5f);
    }
}
