package moe.a2a.dispatch;

/**
 * How a model's router turns a token's router logits into its top-k experts and their weights.
 *
 * <ul>
 *   <li>{@link Scoring#SOFTMAX} (Mixtral, Qwen MoE, DeepSeek-V2): scores are the softmax of the
 *       logits; the {@code K} highest are kept; their weights are the scores, renormalised to sum
 *       to 1 when {@code renormalize}. With {@code groups > 1} (DeepSeek-V2's {@code
 *       group_limited_greedy}) only the {@code topkGroups} groups with the best single score take
 *       part.
 *   <li>{@link Scoring#SIGMOID} (DeepSeek-V3, {@code noaux_tc}): scores are the sigmoid of the
 *       logits; the choice adds the layer's score-correction bias; with {@code groups > 1} only the
 *       {@code topkGroups} best groups of experts take part, a group's score being the sum of its
 *       two best biased scores; the weights are the unbiased scores of the chosen experts,
 *       renormalised when {@code renormalize}.
 * </ul>
 *
 * Weights are then multiplied by {@code scale} ({@code routed_scaling_factor}). Ties go to the
 * lower expert (or group) id, so the ids a token gets are always distinct and in range, whatever
 * the logits hold. Immutable.
 */
public record GateSpec(
        Scoring scoring, boolean renormalize, int groups, int topkGroups, float scale) {

    /** How logits become scores. */
    public enum Scoring {
        SOFTMAX,
        SIGMOID
    }

    /** Mixtral's gate: softmax top-k, renormalised. */
    public static final GateSpec MIXTRAL = new GateSpec(Scoring.SOFTMAX, true, 1, 1, 1f);

    public GateSpec {
        if (groups < 1 || topkGroups < 1 || topkGroups > groups) {
            throw new IllegalArgumentException(
                    "gate groups: n_group="
                            + groups
                            + ", topk_group="
                            + topkGroups
                            + " (expected: 1 <= topk_group <= n_group)");
        }
        if (!(scale > 0) || Float.isInfinite(scale)) {
            throw new IllegalArgumentException(
                    "routed_scaling_factor: " + scale + " (expected: finite, > 0)");
        }
    }

    /**
     * For logs and DescribeModel, e.g. {@code sigmoid top-k, 8 groups keep 4, renormalised, x2.5}.
     */
    public String describe() {
        StringBuilder out =
                new StringBuilder(scoring == Scoring.SOFTMAX ? "softmax top-k" : "sigmoid top-k");
        if (groups > 1) {
            out.append(", ").append(groups).append(" groups keep ").append(topkGroups);
        }
        out.append(renormalize ? ", renormalised" : ", not renormalised");
        if (scale != 1f) {
            out.append(", x").append(scale);
        }
        return out.toString();
    }
}
