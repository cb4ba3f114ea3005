package moe.a2a.experts;

import java.nio.FloatBuffer;
import java.util.HashMap;
import java.util.Map;

/**
 * A plain single-process MoE layer: for each token and each of its top-k experts, the SwiGLU FFN in
 * scalar loops with double accumulation, weighted and summed, plus the layer's shared expert when
 * it has one. No dispatch, no BLAS: it is the independent reference that clients and tests compare
 * served answers against. Not thread-safe.
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
        float[] out = new float[numTokens * hidden];
        for (int t = 0; t < numTokens; t++) {
            double[] acc = new double[hidden];
            for (int k = 0; k < topK; k++) {
                double[] y = mlp(expert(layer, ids[t * topK + k]), x, t * hidden);
                for (int c = 0; c < hidden; c++) {
                    acc[c] += w[t * topK + k] * y[c];
                }
            }
            SharedExpert shared = weights.sharedExpert(layer);
            if (shared != null) {
                double[] y = mlp(shared.mlp(), x, t * hidden);
                double scale = 1;
                if (shared.gate() != null) {
                    double g = 0;
                    for (int c = 0; c < hidden; c++) {
                        g += (double) shared.gate()[c] * x[t * hidden + c];
                    }
                    scale = 1 / (1 + Math.exp(-g));
                }
                for (int c = 0; c < hidden; c++) {
                    acc[c] += scale * y[c];
                }
            }
            for (int c = 0; c < hidden; c++) {
                out[t * hidden + c] = (float) acc[c];
            }
        }
        return out;
    }

    /** {@code W2 · (silu(W1·x) ⊙ (W3·x))} of one token, in double. */
    private static double[] mlp(ExpertWeights e, float[] x, int at) {
        int hidden = e.hidden();
        int ffn = e.ffn();
        double[] act = new double[ffn];
        for (int i = 0; i < ffn; i++) {
            double g = dot(e.w1(), i * hidden, x, at, hidden);
            double u = dot(e.w3(), i * hidden, x, at, hidden);
            act[i] = g / (1 + Math.exp(-g)) * u;
        }
        double[] y = new double[hidden];
        for (int c = 0; c < hidden; c++) {
            for (int i = 0; i < ffn; i++) {
                y[c] += e.w2().get(c * ffn + i) * act[i];
            }
        }
        return y;
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
