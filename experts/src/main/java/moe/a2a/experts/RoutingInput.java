package moe.a2a.experts;

/** How a rank's tokens of one step are routed. Immutable; arrays are not copied. */
public sealed interface RoutingInput {

    /** Routing chosen by the client: {@code [T, K]} ids and weights, used as given. */
    record TopK(int[] ids, float[] weights) implements RoutingInput {}

    /** Router logits {@code [T, E]}: softmax top-k with renormalised weights. */
    record Logits(float[] logits) implements RoutingInput {}

    /** The model's own gate computes the logits from the tokens. */
    record ModelGate() implements RoutingInput {}
}
