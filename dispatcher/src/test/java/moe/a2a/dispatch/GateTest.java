package moe.a2a.dispatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
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

    @Test
    void shouldMatchDeepSeekNoAuxGateWhenLogitsAndBiasAreRandom() {
        for (long seed = 0; seed < 200; seed++) {
            SplittableRandom random = new SplittableRandom(seed);
            int groups = 1 << random.nextInt(4);
            int e = groups * (2 + random.nextInt(4));
            int topkGroups = 1 + random.nextInt(groups);
            int k = 1 + random.nextInt(Math.min(4, topkGroups * (e / groups)));
            boolean renormalize = random.nextBoolean();
            float scale = renormalize ? 2.5f : 1f;
            GateSpec spec =
                    new GateSpec(GateSpec.Scoring.SIGMOID, renormalize, groups, topkGroups, scale);
            int t = 1 + random.nextInt(6);
            float[] logits = distinct(random, t * e);
            float[] bias = new float[e];
            for (int x = 0; x < e; x++) {
                // multiples of 1/64 over distinct sigmoid scores keep every comparison strict
                bias[x] = random.nextInt(-8, 9) / 64f;
            }
            int[] ids = new int[t * k];
            float[] w = new float[t * k];
            Gate.route(spec, logits, t, e, k, bias, ids, w);
            for (int tok = 0; tok < t; tok++) {
                int[] expected = noAuxReference(logits, tok * e, e, k, bias, groups, topkGroups);
                double sum = 0;
                for (int j = 0; j < k; j++) {
                    sum += sigmoid(logits[tok * e + expected[j]]);
                }
                for (int j = 0; j < k; j++) {
                    String where = "seed=" + seed + " token=" + tok + " k=" + j;
                    assertThat(ids[tok * k + j]).as(where).isEqualTo(expected[j]);
                    double s = sigmoid(logits[tok * e + expected[j]]);
                    double weight = (renormalize ? s / sum : s) * scale;
                    assertThat((double) w[tok * k + j]).as(where).isCloseTo(weight, within(1e-5));
                }
            }
        }
    }

    @Test
    void shouldMatchDeepSeekV2GroupLimitedGreedyGateWhenLogitsAreRandom() {
        for (long seed = 0; seed < 200; seed++) {
            SplittableRandom random = new SplittableRandom(seed);
            int groups = 2 << random.nextInt(3);
            int e = groups * (1 + random.nextInt(4));
            int topkGroups = 1 + random.nextInt(groups);
            int k = 1 + random.nextInt(Math.min(4, topkGroups * (e / groups)));
            GateSpec spec = new GateSpec(GateSpec.Scoring.SOFTMAX, false, groups, topkGroups, 16f);
            float[] logits = distinct(random, e);
            int[] ids = new int[k];
            float[] w = new float[k];
            Gate.route(spec, logits, 1, e, k, null, ids, w);

            double max = Double.NEGATIVE_INFINITY;
            for (float l : logits) {
                max = Math.max(max, l);
            }
            double z = 0;
            for (float l : logits) {
                z += Math.exp(l - max);
            }
            double[] p = new double[e];
            for (int x = 0; x < e; x++) {
                p[x] = Math.exp(logits[x] - max) / z;
            }
            // groups ranked by their best expert; the best experts of the kept groups
            int size = e / groups;
            Integer[] order = new Integer[groups];
            double[] best = new double[groups];
            for (int g = 0; g < groups; g++) {
                order[g] = g;
                for (int x = g * size; x < (g + 1) * size; x++) {
                    best[g] = Math.max(best[g], p[x]);
                }
            }
            Arrays.sort(order, (a, b) -> Double.compare(best[b], best[a]));
            List<Integer> candidates = new ArrayList<>();
            for (int i = 0; i < topkGroups; i++) {
                for (int x = order[i] * size; x < (order[i] + 1) * size; x++) {
                    candidates.add(x);
                }
            }
            candidates.sort((a, b) -> Double.compare(p[b], p[a]));
            for (int j = 0; j < k; j++) {
                String where = "seed=" + seed + " k=" + j;
                assertThat(ids[j]).as(where).isEqualTo(candidates.get(j));
                assertThat((double) w[j]).as(where).isCloseTo(16 * p[ids[j]], within(1e-5));
            }
        }
    }

    @Test
    void shouldKeepPlainSoftmaxScoresWhenNotRenormalised() {
        GateSpec spec = new GateSpec(GateSpec.Scoring.SOFTMAX, false, 1, 1, 1f);
        float[] logits = {0.5f, 2f, -1f, 1f};
        int[] ids = new int[2];
        float[] w = new float[2];
        Gate.route(spec, logits, 1, 4, 2, null, ids, w);
        double z = Math.exp(0.5) + Math.exp(2) + Math.exp(-1) + Math.exp(1);
        assertThat(ids).containsExactly(1, 3);
        assertThat((double) w[0]).isCloseTo(Math.exp(2) / z, within(1e-6));
        assertThat((double) w[1]).isCloseTo(Math.exp(1) / z, within(1e-6));
    }

    @Test
    void shouldPreferANumberToNaNInTheMixtralGate() {
        int[] ids = new int[2];
        Gate.softmaxTopK(new float[] {Float.NaN, -3f, Float.NaN, 1f}, 1, 4, 2, ids, new float[2]);
        assertThat(ids).containsExactly(3, 1);
    }

    @Test
    void shouldGiveDistinctIdsInRangeWhenLogitsAreNotNumbers() {
        GateSpec spec = new GateSpec(GateSpec.Scoring.SIGMOID, true, 2, 1, 1f);
        float[] logits = {Float.NaN, Float.NaN, Float.POSITIVE_INFINITY, 0f};
        int[] ids = new int[2];
        Gate.route(spec, logits, 1, 4, 2, new float[4], ids, new float[2]);
        assertThat(ids[0]).as("a number beats NaN").isEqualTo(2);
        assertThat(ids[0]).isNotEqualTo(ids[1]);
        assertThat(ids[0]).isBetween(0, 3);
        assertThat(ids[1]).isBetween(0, 3);
    }

    /**
     * DeepSeek-V3's noaux_tc choice written out with sorting: group scores as the sum of the two
     * best biased scores, the best groups kept, then the best experts inside them.
     */
    private static int[] noAuxReference(
            float[] logits, int row, int e, int k, float[] bias, int groups, int topkGroups) {
        int size = e / groups;
        double[] choice = new double[e];
        for (int x = 0; x < e; x++) {
            choice[x] = (float) sigmoid(logits[row + x]) + bias[x];
        }
        Integer[] groupOrder = new Integer[groups];
        double[] groupScore = new double[groups];
        for (int g = 0; g < groups; g++) {
            double[] members = Arrays.copyOfRange(choice, g * size, (g + 1) * size);
            Arrays.sort(members);
            groupScore[g] = size == 1 ? members[0] : members[size - 1] + members[size - 2];
            groupOrder[g] = g;
        }
        Arrays.sort(groupOrder, (a, b) -> Double.compare(groupScore[b], groupScore[a]));
        List<Integer> candidates = new ArrayList<>();
        for (int i = 0; i < topkGroups; i++) {
            for (int x = groupOrder[i] * size; x < (groupOrder[i] + 1) * size; x++) {
                candidates.add(x);
            }
        }
        candidates.sort((a, b) -> Double.compare(choice[b], choice[a]));
        int[] out = new int[k];
        for (int j = 0; j < k; j++) {
            out[j] = candidates.get(j);
        }
        return out;
    }

    private static double sigmoid(float x) {
        return 1 / (1 + Math.exp(-x));
    }

    /** Logits far enough apart that no two scores tie after the bias. */
    private static float[] distinct(SplittableRandom random, int n) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] = (float) random.nextDouble(-4, 4);
        }
        return out;
    }
}
