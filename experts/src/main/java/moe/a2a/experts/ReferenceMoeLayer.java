package moe.a2a.experts;

import java.nio.FloatBuffer;
import java.util.HashMap;
import java.util.Map;

/**
 * A plain single-process MoE layer: for each token and each of its top-k experts, the SwiGLU FFN in
 * scalar loops with double accumulation, weighted and summed. No dispatch, no BLAS: it is the
 * independent reference that clients and tests compare served answers against. Not thread-safe.
 */
public final class ReferenceMoeLayer {
    private final WeightSource weights;
    private final Map<Long, ExpertWeights> cache = new HashMap<>();

    public ReferenceMoeLayer(WeightSource weights) {
        this.weights = weights;
    }

    /** The layer output {@code [T, H]} for fp32 tokens {@code x} and routing {@code [T, K]}. */
    public float[] forward(int layer, float[] x, int numTokens, int topK, int[] ids, float[] w) {
        final int hidden = weights.hidden();
        final int ffn = weights.ffn();
        float[] out = new float[numTokens * hidden];
        double[] act = new double[ffn];
        for (int t = 0; t < numTokens; t++) {
            double[] acc = new double[hidden];
            for (int k = 0; k < topK; k++) {
                ExpertWeights e = expert(layer, ids[t * topK + k]);
                for (int i = 0; i < ffn; i++) {
                    double g = dot(e.w1(), i * hidden, x, t * hidden, hidden);
                    double u = dot(e.w3(), i * hidden, x, t * hidden, hidden);
                    act[i] = g / (1 + Math.exp(-g)) * u;
                }
                for (int c = 0; c < hidden; c++) {
                    double y = 0;
                    for (int i = 0; i < ffn; i++) {
                        y += e.w2().get(c * ffn + i) * act[i];
                    }
                    acc[c] += w[t * topK + k] * y;
                }
            }
            for (int c = 0; c < hidden; c++) {
                out[t * hidden + c] = (float) acc[c];
            }
        }
        return out;
    }

    /** Router logits {@code [T, E]} of the model's gate for fp32 tokens {@code x}. */
    public float[] gateLogits(int layer, float[] x, int numTokens) {
        final int hidden = weights.hidden();
        final int experts = weights.experts();
        float[] gate = weights.gate(layer);
        float[] logits = new float[numTokens * experts];
        for (int t = 0; t < numTokens; t++) {
            for (int e = 0; e < experts; e++) {
                double s = 0;
                for (int c = 0; c < hidden; c++) {
                    s += (double) gate[e * hidden + c] * x[t * hidden + c];
                }
                logits[t * experts + e] = (float) s;
            }
        }
        return logits;
    }

    private ExpertWeights expert(int layer, int expert) {
        return cache.computeIfAbsent(
                ((long) layer << 32) | expert, k -> weights.expert(layer, expert));
    }

    private static double dot(FloatBuffer w, int wOff, float[] x, int xOff, int n) {
        double s = 0;
        for (int j = 0; j < n; j++) {
            s += (double) w.get(wOff + j) * x[xOff + j];
        }
        return s;
    }
}
