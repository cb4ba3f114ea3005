package moe.a2a.dispatch;

import java.util.SplittableRandom;

/** Seeded routings for tests: uniform without repeats, or concentrated on a few experts. */
public final class TestRoutings {
    private TestRoutings() {}

    /** [T, K] distinct expert ids per token drawn uniformly from {@code [0, E)}. */
    public static int[] uniform(SplittableRandom random, int numTokens, int numExperts, int topK) {
        int[] ids = new int[numTokens * topK];
        for (int t = 0; t < numTokens; t++) {
            for (int k = 0; k < topK; k++) {
                int e;
                do {
                    e = random.nextInt(numExperts);
                } while (contains(ids, t * topK, k, e));
                ids[t * topK + k] = e;
            }
        }
        return ids;
    }

    /** Every token chooses experts {@code first, first+1, ..., first+K-1}. */
    public static int[] concentrated(int numTokens, int topK, int first) {
        int[] ids = new int[numTokens * topK];
        for (int t = 0; t < numTokens; t++) {
            for (int k = 0; k < topK; k++) {
                ids[t * topK + k] = first + k;
            }
        }
        return ids;
    }

    /** [T, K] positive weights summing to 1 per token. */
    public static float[] weights(SplittableRandom random, int numTokens, int topK) {
        float[] w = new float[numTokens * topK];
        for (int t = 0; t < numTokens; t++) {
            float sum = 0;
            for (int k = 0; k < topK; k++) {
                w[t * topK + k] = 0.05f + (float) random.nextDouble();
                sum += w[t * topK + k];
            }
            for (int k = 0; k < topK; k++) {
                w[t * topK + k] /= sum;
            }
        }
        return w;
    }

    private static boolean contains(int[] ids, int from, int count, int e) {
        for (int i = 0; i < count; i++) {
            if (ids[from + i] == e) {
                return true;
            }
        }
        return false;
    }
}
