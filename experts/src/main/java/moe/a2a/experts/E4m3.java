package moe.a2a.experts;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;

/**
 * FP8 E4M3 ({@code float8_e4m3fn}: 1 sign, 4 exponent bits with bias 7, 3 mantissa bits, no
 * infinities, {@code S.1111.111} is NaN) weights with block scales, as DeepSeek-V3 stores them: the
 * weight {@code [out, in]} times {@code weight_scale_inv[out / B][in / B]}. Stateless.
 */
public final class E4m3 {
    private static final float[] VALUES = new float[256];

    static {
        for (int b = 0; b < 256; b++) {
            int exponent = (b >> 3) & 0xF;
            int mantissa = b & 0x7;
            float magnitude =
                    exponent == 0
                            ? Math.scalb(mantissa / 8f, -6)
                            : Math.scalb(1 + mantissa / 8f, exponent - 7);
            if (exponent == 0xF && mantissa == 0x7) {
                magnitude = Float.NaN;
            }
            VALUES[b] = (b & 0x80) != 0 ? -magnitude : magnitude;
        }
    }

    private E4m3() {}

    public static float toFloat(byte b) {
        return VALUES[b & 0xFF];
    }

    /**
     * {@code [rows, cols]} E4M3 bytes times their blocks' scales ({@code [ceil(rows / B), ceil(cols
     * / B)]} fp32), into {@code out}.
     */
    public static void dequantize(
            ByteBuffer weights, float[] scales, int rows, int cols, int block, FloatBuffer out) {
        int scaleCols = Math.ceilDiv(cols, block);
        for (int r = 0; r < rows; r++) {
            int scaleRow = (r / block) * scaleCols;
            for (int c = 0; c < cols; c++) {
                long i = (long) r * cols + c;
                out.put((int) i, toFloat(weights.get((int) i)) * scales[scaleRow + c / block]);
            }
        }
    }
}
