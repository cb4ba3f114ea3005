package moe.a2a.experts;

import java.nio.FloatBuffer;

/**
 * One SwiGLU expert's weights in fp32, off-heap and row-major, as BLAS consumes them: {@code w1,
 * w3: [I, H]} (gate and up projections), {@code w2: [H, I]} (down projection). Immutable once
 * built.
 */
public record ExpertWeights(int hidden, int ffn, FloatBuffer w1, FloatBuffer w3, FloatBuffer w2)
        implements HeldExpert {
    public ExpertWeights {
        checkSize("w1", w1, (long) ffn * hidden);
        checkSize("w3", w3, (long) ffn * hidden);
        checkSize("w2", w2, (long) hidden * ffn);
    }

    @Override
    public long bytes() {
        return (long) Float.BYTES * (w1.capacity() + w3.capacity() + w2.capacity());
    }

    private static void checkSize(String name, FloatBuffer buffer, long expected) {
        if (buffer.capacity() != expected) {
            throw new IllegalArgumentException(
                    name + ".size: " + buffer.capacity() + " (expected: " + expected + ")");
        }
    }
}
