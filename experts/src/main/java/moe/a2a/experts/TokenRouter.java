package moe.a2a.experts;

import java.nio.ByteBuffer;
import moe.a2a.kernels.DType;

/**
 * Turns a {@link RoutingInput} into top-k ids and weights: given top-k as is, router logits through
 * the model's gate, or the model's own router weights and gate. Results stay valid until the next
 * call. Not thread-safe: each rank owns one.
 */
public final class TokenRouter {
    private final ModelGate gate;
    private final int topK;
    private int[] ownIds = new int[0];
    private float[] ownWeights = new float[0];
    private int[] ids = ownIds;
    private float[] weights = ownWeights;

    public TokenRouter(WeightSource source, int topK) {
        this.gate = new ModelGate(source);
        this.topK = topK;
    }

    /**
     * Routes {@code numTokens} tokens ({@code [T, H]} of {@code dtype} from index 0 of {@code
     * tokens}).
     */
    public void route(
            int layer, DType dtype, ByteBuffer tokens, int numTokens, RoutingInput routing) {
        if (routing instanceof RoutingInput.TopK given) {
            ids = given.ids();
            weights = given.weights();
            return;
        }
        if (ownIds.length < numTokens * topK) {
            ownIds = new int[numTokens * topK];
            ownWeights = new float[numTokens * topK];
        }
        ids = ownIds;
        weights = ownWeights;
        if (routing instanceof RoutingInput.Logits given) {
            gate.select(layer, given.logits(), numTokens, topK, ownIds, ownWeights);
        } else {
            gate.route(layer, dtype, tokens, numTokens, topK, ownIds, ownWeights);
        }
    }

    /** {@code [T, K]} expert ids of the last route; never write to it (it may be the caller's). */
    public int[] ids() {
        return ids;
    }

    /** {@code [T, K]} weights of the last route; never write to it (it may be the caller's). */
    public float[] weights() {
        return weights;
    }
}
