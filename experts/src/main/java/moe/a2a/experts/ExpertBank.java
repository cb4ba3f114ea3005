package moe.a2a.experts;

import java.nio.FloatBuffer;
import moe.a2a.dispatch.DispatchHandle;
import moe.a2a.dispatch.DispatchResult;
import moe.a2a.dispatch.Placement;

/**
 * The experts one rank hosts, for every layer, and their SwiGLU forward pass: {@code y = W2 ·
 * (silu(W1·x) ⊙ (W3·x))}, fp32 throughout, GEMMs through {@link Sgemm}. Scratch buffers grow to the
 * largest group seen. Owned by the rank thread.
 */
public final class ExpertBank {
    private final int hidden;
    private final int ffn;
    private final ExpertWeights[][] weights;
    private FloatBuffer input = Buffers.floats(0);
    private FloatBuffer gateProj = Buffers.floats(0);
    private FloatBuffer upProj = Buffers.floats(0);

    /** Loads the experts that {@code placement} puts on {@code rank}, for every layer. */
    public ExpertBank(WeightSource source, Placement placement, int rank) {
        this.hidden = source.hidden();
        this.ffn = source.ffn();
        int slots = placement.localExperts(rank);
        this.weights = new ExpertWeights[source.layers()][slots];
        for (int layer = 0; layer < source.layers(); layer++) {
            for (int slot = 0; slot < slots; slot++) {
                weights[layer][slot] = source.expert(layer, placement.expertAt(rank, slot));
            }
        }
    }

    /**
     * Runs every local expert of {@code layer} on its rows of {@code result}; writes fp32 outputs
     * in the handle's grouped order into {@code outputs} ({@code [numExpertRows, H]}).
     */
    public void forward(int layer, DispatchResult result, FloatBuffer outputs) {
        DispatchHandle handle = result.handle();
        for (int slot = 0; slot < handle.localExperts(); slot++) {
            int rows = handle.recvTokensPerLocalExpert(slot);
            if (rows == 0) {
                continue;
            }
            input = Buffers.ensure(input, (long) rows * hidden);
            result.gather(slot, input, 0);
            FloatBuffer out = outputs.slice(handle.expertOffsets(slot) * hidden, rows * hidden);
            swiglu(weights[layer][slot], input, rows, out);
        }
    }

    /** {@code out[rows, H] = W2 · (silu(W1·x) ⊙ (W3·x))} for {@code x[rows, H]}. */
    void swiglu(ExpertWeights w, FloatBuffer x, int rows, FloatBuffer out) {
        gateProj = Buffers.ensure(gateProj, (long) rows * ffn);
        upProj = Buffers.ensure(upProj, (long) rows * ffn);
        Sgemm.xwT(x, rows, hidden, w.w1(), ffn, gateProj);
        Sgemm.xwT(x, rows, hidden, w.w3(), ffn, upProj);
        for (int i = 0; i < rows * ffn; i++) {
            float a = gateProj.get(i);
            gateProj.put(i, a / (1f + (float) Math.exp(-a)) * upProj.get(i));
        }
        Sgemm.xwT(gateProj, rows, ffn, w.w2(), hidden, out);
    }
}
