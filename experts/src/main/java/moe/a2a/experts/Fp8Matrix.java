package moe.a2a.experts;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;

/**
 * A weight {@code [rows, cols]} as an FP8 checkpoint stores it: E4M3 codes, row-major, and one fp32
 * scale per {@code block × block} tile ({@code [ceil(rows / block), ceil(cols / block)]}), the
 * weight being each code's value times its tile's scale.
 */
public record Fp8Matrix(ByteBuffer codes, float[] scales, int rows, int cols, int block) {
    public Fp8Matrix {
        if (codes.capacity() != (long) rows * cols) {
            throw new IllegalArgumentException(
                    "codes: "
                            + codes.capacity()
                            + " bytes (expected: "
                            + (long) rows * cols
                            + ", rows × cols)");
        }
        int tiles = Math.ceilDiv(rows, block) * Math.ceilDiv(cols, block);
        if (scales.length != tiles) {
            throw new IllegalArgumentException(
                    "scales: "
                            + scales.length
                            + " (expected: "
                            + tiles
                            + " tiles of "
                            + block
                            + ")");
        }
    }

    /** The weight in fp32: what the CPU path computes with. */
    public FloatBuffer dequantized() {
        FloatBuffer out = Buffers.floats((long) rows * cols);
        E4m3.dequantize(codes, scales, rows, cols, block, out);
        return out;
    }
}
