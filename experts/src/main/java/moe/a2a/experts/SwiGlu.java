package moe.a2a.experts;

import java.nio.FloatBuffer;

/**
 * The SwiGLU forward pass {@code y = W2 · (silu(W1·x) ⊙ (W3·x))}, fp32, GEMMs through {@link
 * Sgemm}, with scratch that grows to the largest batch seen. One per thread that runs it.
 */
final class SwiGlu {
    private final int hidden;
    private FloatBuffer gateProj = Buffers.floats(0);
    private FloatBuffer upProj = Buffers.floats(0);

    SwiGlu(int hidden) {
        this.hidden = hidden;
    }

    /** {@code out[rows, H] = W2 · (silu(W1·x) ⊙ (W3·x))} for {@code x[rows, H]}. */
    void forward(ExpertWeights w, FloatBuffer x, int rows, FloatBuffer out) {
        final int ffn = w.ffn();
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
