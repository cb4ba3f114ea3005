package moe.a2a.dispatch;

/**
 * Softmax top-k gating with Mixtral semantics: softmax over the {@code E} router logits, keep the
 * {@code K} largest (ties go to the lower expert id), renormalise their weights to sum to 1.
 * Stateless.
 */
public final class Gate {
    private Gate() {}

    /**
     * Routes {@code numTokens} tokens whose logits are rows of {@code logits} ({@code [T, E]}).
     * Writes {@code [T, K]} ids and weights.
     */
    public static void softmaxTopK(
            float[] logits,
            int numTokens,
            int numExperts,
            int topK,
            int[] topkIds,
            float[] topkWeights) {
        for (int t = 0; t < numTokens; t++) {
            routeToken(logits, t * numExperts, numExperts, topK, topkIds, topkWeights, t * topK);
        }
    }

    private static void routeToken(
            float[] logits,
            int row,
            int numExperts,
            int topK,
            int[] ids,
            float[] weights,
            int out) {
        for (int k = 0; k < topK; k++) {
            int best = -1;
            float bestLogit = Float.NEGATIVE_INFINITY;
            for (int e = 0; e < numExperts; e++) {
                float l = logits[row + e];
                if ((best < 0 || l > bestLogit) && !chosen(ids, out, k, e)) {
                    best = e;
                    bestLogit = l;
                }
            }
            ids[out + k] = best;
        }
        // The softmax denominator cancels in the renormalisation; only the kept logits matter.
        float max = logits[row + ids[out]];
        float sum = 0f;
        for (int k = 0; k < topK; k++) {
            float w = (float) Math.exp(logits[row + ids[out + k]] - max);
            weights[out + k] = w;
            sum += w;
        }
        for (int k = 0; k < topK; k++) {
            weights[out + k] /= sum;
        }
    }

    private static boolean chosen(int[] ids, int out, int count, int expert) {
        for (int k = 0; k < count; k++) {
            if (ids[out + k] == expert) {
                return true;
            }
        }
        return false;
    }
}
