package moe.a2a.gpu;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import moe.a2a.kernels.DType;

/**
 * The kernels of {@code kernels.cu} replayed in Java: the same operations in the same order, no
 * fused multiply-add, so the GPU path's index lists are checked bit for bit without a GPU.
 */
final class KernelReplays {
    private KernelReplays() {}

    /** gather_rows: {@code dst[r] = src[index[r]]}. */
    static ByteBuffer gatherRows(ByteBuffer src, int[] index, int rows, int rowBytes) {
        ByteBuffer dst =
                ByteBuffer.allocateDirect(Math.max(1, rows * rowBytes))
                        .order(ByteOrder.LITTLE_ENDIAN);
        for (int r = 0; r < rows; r++) {
            dst.put(r * rowBytes, src, index[r] * rowBytes, rowBytes);
        }
        return dst;
    }

    /** bf16_to_fp32 over {@code n} elements: an identity expert. */
    static float[] widen(ByteBuffer bf16, int n) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] = DType.bf16ToFloat(bf16.getShort(i * Short.BYTES));
        }
        return out;
    }

    /** weighted_sum_bf16: acc = acc + w * x in list order, from 0, rounded to bf16. */
    static ByteBuffer weightedSumBf16(
            float[] expertOut, int[] start, int[] row, float[] weight, int tokens, int hidden) {
        ByteBuffer out =
                ByteBuffer.allocateDirect(Math.max(1, tokens * hidden * Short.BYTES))
                        .order(ByteOrder.LITTLE_ENDIAN);
        for (int j = 0; j < tokens; j++) {
            for (int c = 0; c < hidden; c++) {
                float acc = 0f;
                for (int e = start[j]; e < start[j + 1]; e++) {
                    acc = acc + weight[e] * expertOut[row[e] * hidden + c];
                }
                out.putShort((j * hidden + c) * Short.BYTES, DType.floatToBf16(acc));
            }
        }
        return out;
    }

    /** accumulate_bf16: the first returned row as is, the others added, 0 when none. */
    static float[] accumulateBf16(
            ByteBuffer rows, int[] start, int[] index, int tokens, int hidden) {
        float[] out = new float[tokens * hidden];
        for (int t = 0; t < tokens; t++) {
            for (int c = 0; c < hidden; c++) {
                float acc = 0f;
                for (int i = start[t]; i < start[t + 1]; i++) {
                    float x =
                            DType.bf16ToFloat(rows.getShort((index[i] * hidden + c) * Short.BYTES));
                    acc = i == start[t] ? x : acc + x;
                }
                out[t * hidden + c] = acc;
            }
        }
        return out;
    }

    /** Throws naming {@code where} and the first of {@code n} values whose bits differ. */
    static void assertSameBits(String where, float[] actual, float[] expected, int n) {
        for (int i = 0; i < n; i++) {
            if (Float.floatToRawIntBits(actual[i]) != Float.floatToRawIntBits(expected[i])) {
                throw new AssertionError(
                        where + " element=" + i + ": " + actual[i] + " vs CPU " + expected[i]);
            }
        }
    }
}
