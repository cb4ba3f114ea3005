package moe.a2a.experts;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import moe.a2a.dispatch.Gate;
import moe.a2a.dispatch.GateSpec;
import moe.a2a.kernels.DType;

/**
 * The model's router: logits {@code x · Wgᵀ} through {@link Sgemm} (fp32), then the model's gate
 * ({@link Gate#route} with its {@link GateSpec} and each layer's score-correction bias). Scratch
 * grows to the largest batch seen. Not thread-safe: each rank, and each caller outside the data
 * plane, uses its own.
 */
public final class ModelGate {
    private final FloatBuffer[] gates;
    private final GateSpec spec;
    private final float[][] biases;
    private final int experts;
    private final int hidden;
    private FloatBuffer input = Buffers.floats(0);
    private FloatBuffer logitsOut = Buffers.floats(0);
    private float[] logits = new float[0];

    public ModelGate(WeightSource weights) {
        this.experts = weights.experts();
        this.hidden = weights.hidden();
        this.gates = new FloatBuffer[weights.layers()];
        this.spec = weights.gateSpec();
        this.biases = new float[weights.layers()][];
        for (int layer = 0; layer < gates.length; layer++) {
            float[] g = weights.gate(layer);
            gates[layer] = Buffers.floats(g.length).put(g).flip();
            biases[layer] = weights.gateBias(layer);
        }
    }

    /** Routes {@code numTokens} tokens of {@code dtype} in {@code tokens} (from index 0). */
    public void route(
            int layer,
            DType dtype,
            ByteBuffer tokens,
            int numTokens,
            int topK,
            int[] topkIds,
            float[] topkWeights) {
        input = Buffers.ensure(input, (long) numTokens * hidden);
        logitsOut = Buffers.ensure(logitsOut, (long) numTokens * experts);
        dtype.decode(tokens, 0, input, 0, numTokens * hidden);
        Sgemm.xwT(input, numTokens, hidden, gates[layer], experts, logitsOut);
        if (logits.length < numTokens * experts) {
            logits = new float[numTokens * experts];
        }
        logitsOut.get(0, logits, 0, numTokens * experts);
        select(layer, logits, numTokens, topK, topkIds, topkWeights);
    }

    /** The model's gate on router logits {@code [T, E]} of {@code layer}. */
    public void select(
            int layer,
            float[] logits,
            int numTokens,
            int topK,
            int[] topkIds,
            float[] topkWeights) {
        Gate.route(spec, logits, numTokens, experts, topK, biases[layer], topkIds, topkWeights);
    }
}
