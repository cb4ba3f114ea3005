package moe.a2a.dispatch;

import java.util.Arrays;

/**
 * Top-k gating: {@link #softmaxTopK} with Mixtral semantics (softmax over the {@code E} router
 * logits, keep the {@code K} largest, ties to the lower expert id, weights renormalised to sum to
 * 1), and {@link #route} for any {@link GateSpec}. Stateless.
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
                if ((best < 0 || beats(l, bestLogit)) && !chosen(ids, out, k, e)) {
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

    /** Whether {@code a} ranks above {@code b}: greater, or a number against NaN. */
    private static boolean beats(float a, float b) {
        return a > b || (Float.isNaN(b) && !Float.isNaN(a));
    }

    private static boolean chosen(int[] ids, int out, int count, int expert) {
        for (int k = 0; k < count; k++) {
            if (ids[out + k] == expert) {
                return true;
            }
        }
        return false;
    }

    /**
     * Routes {@code numTokens} tokens by {@code spec}; {@code bias} ({@code [E]}, or null) is added
     * to the scores for the choice only. Writes {@code [T, K]} ids and weights.
     */
    public static void route(
            GateSpec spec,
            float[] logits,
            int numTokens,
            int numExperts,
            int topK,
            float[] bias,
            int[] topkIds,
            float[] topkWeights) {
        if (spec.equals(GateSpec.MIXTRAL) && bias == null) {
            softmaxTopK(logits, numTokens, numExperts, topK, topkIds, topkWeights);
            return;
        }
        float[] scores = new float[numExperts];
        float[] choice = new float[numExperts];
        boolean[] eligible = new boolean[numExperts];
        for (int t = 0; t < numTokens; t++) {
            int row = t * numExperts;
            int out = t * topK;
            score(spec.scoring(), logits, row, numExperts, scores);
            for (int e = 0; e < numExperts; e++) {
                float c = bias == null ? scores[e] : scores[e] + bias[e];
                // NaN (only NaN hidden states make it) ranks below every number
                choice[e] = Float.isNaN(c) ? Float.NEGATIVE_INFINITY : c;
            }
            keepGroups(spec, choice, numExperts, eligible);
            for (int k = 0; k < topK; k++) {
                int best = -1;
                for (int e = 0; e < numExperts; e++) {
                    if (eligible[e]
                            && !chosen(topkIds, out, k, e)
                            && (best < 0 || beats(choice[e], choice[best]))) {
                        best = e;
                    }
                }
                topkIds[out + k] = best;
            }
            float sum = 0f;
            for (int k = 0; k < topK; k++) {
                topkWeights[out + k] = scores[topkIds[out + k]];
                sum += topkWeights[out + k];
            }
            for (int k = 0; k < topK; k++) {
                float w = topkWeights[out + k];
                if (spec.renormalize()) {
                    w = spec.scoring() == GateSpec.Scoring.SIGMOID ? w / (sum + 1e-20f) : w / sum;
                }
                topkWeights[out + k] = w * spec.scale();
            }
        }
    }

    /** Softmax or sigmoid of one token's logits. */
    private static void score(
            GateSpec.Scoring scoring, float[] logits, int row, int numExperts, float[] scores) {
        if (scoring == GateSpec.Scoring.SIGMOID) {
            for (int e = 0; e < numExperts; e++) {
                scores[e] = (float) (1 / (1 + Math.exp(-logits[row + e])));
            }
            return;
        }
        float max = Float.NEGATIVE_INFINITY;
        for (int e = 0; e < numExperts; e++) {
            max = Math.max(max, logits[row + e]);
        }
        float sum = 0f;
        for (int e = 0; e < numExperts; e++) {
            scores[e] = (float) Math.exp(logits[row + e] - max);
            sum += scores[e];
        }
        for (int e = 0; e < numExperts; e++) {
            scores[e] /= sum;
        }
    }

    /**
     * Marks the experts of the {@code topkGroups} best groups as eligible (every expert when there
     * is one group); a group's score is the sum of its two best choice scores (sigmoid scoring; its
     * only one in a group of one), or its best score (softmax scoring).
     */
    private static void keepGroups(
            GateSpec spec, float[] choice, int numExperts, boolean[] eligible) {
        int groups = spec.groups();
        if (groups == 1) {
            Arrays.fill(eligible, 0, numExperts, true);
            return;
        }
        int size = numExperts / groups;
        float[] groupScore = new float[groups];
        for (int g = 0; g < groups; g++) {
            float first = Float.NEGATIVE_INFINITY;
            float second = Float.NEGATIVE_INFINITY;
            for (int e = g * size; e < (g + 1) * size; e++) {
                if (choice[e] > first) {
                    second = first;
                    first = choice[e];
                } else if (choice[e] > second) {
                    second = choice[e];
                }
            }
            groupScore[g] =
                    size == 1 || spec.scoring() == GateSpec.Scoring.SOFTMAX
                            ? first
                            : first + second;
        }
        boolean[] kept = new boolean[groups];
        for (int i = 0; i < spec.topkGroups(); i++) {
            int best = -1;
            for (int g = 0; g < groups; g++) {
                if (!kept[g] && (best < 0 || beats(groupScore[g], groupScore[best]))) {
                    best = g;
                }
            }
            kept[best] = true;
        }
        for (int e = 0; e < numExperts; e++) {
            eligible[e] = kept[e / size];
        }
    }
}
