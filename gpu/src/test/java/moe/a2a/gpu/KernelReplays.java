package moe.a2a.gpu;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HashSet;
import java.util.Set;
import moe.a2a.kernels.DType;
import org.jspecify.annotations.Nullable;

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

    /**
     * widen_rows: {@code dst[r]} = fp32 of row {@code index[r]} of {@code src} (row {@code r} when
     * {@code index} is null), rows in {@code dtype}.
     */
    static float[] widenRows(
            ByteBuffer src, int @Nullable [] index, int rows, int hidden, DType dtype) {
        float[] out = new float[rows * hidden];
        for (int r = 0; r < rows; r++) {
            int from = (index == null ? r : index[r]) * hidden;
            for (int c = 0; c < hidden; c++) {
                out[r * hidden + c] = load(src, from + c, dtype);
            }
        }
        return out;
    }

    /** weighted_sum: acc = acc + w * x in list order, from 0, stored in {@code dtype}. */
    static ByteBuffer weightedSum(
            float[] expertOut,
            int[] start,
            int[] row,
            float[] weight,
            int tokens,
            int hidden,
            DType dtype) {
        ByteBuffer out =
                ByteBuffer.allocateDirect(Math.max(1, tokens * hidden * dtype.sizeBytes()))
                        .order(ByteOrder.LITTLE_ENDIAN);
        for (int j = 0; j < tokens; j++) {
            for (int c = 0; c < hidden; c++) {
                float acc = 0f;
                for (int e = start[j]; e < start[j + 1]; e++) {
                    acc = acc + weight[e] * expertOut[row[e] * hidden + c];
                }
                store(out, j * hidden + c, acc, dtype);
            }
        }
        return out;
    }

    /**
     * accumulate: the first returned row (in {@code dtype}) as is, the others added, 0 when none.
     */
    static float[] accumulate(
            ByteBuffer rows, int[] start, int[] index, int tokens, int hidden, DType dtype) {
        float[] out = new float[tokens * hidden];
        for (int t = 0; t < tokens; t++) {
            for (int c = 0; c < hidden; c++) {
                float acc = 0f;
                for (int i = start[t]; i < start[t + 1]; i++) {
                    float x = load(rows, index[i] * hidden + c, dtype);
                    acc = i == start[t] ? x : acc + x;
                }
                out[t * hidden + c] = acc;
            }
        }
        return out;
    }

    /**
     * add_shared, one block of {@code blockDim} threads a token: each thread's strided gate·x in
     * double from 0, the halving tree over the block, the sigmoid in double cast to float, then
     * {@code out = out + scale * shared} as two float operations. {@code Math.exp} stands for
     * CUDA's double {@code exp}: both are within an ulp, so the float scale can differ only next to
     * a float rounding boundary.
     */
    static void addShared(
            float[] shared,
            ByteBuffer x,
            float @Nullable [] gate,
            float[] out,
            int hidden,
            int tokens,
            int blockDim) {
        addShared(shared, x, DType.BF16, gate, out, hidden, tokens, blockDim);
    }

    /** add_shared with the tokens {@code x} in {@code dtype}. */
    static void addShared(
            float[] shared,
            ByteBuffer x,
            DType dtype,
            float @Nullable [] gate,
            float[] out,
            int hidden,
            int tokens,
            int blockDim) {
        double[] partial = new double[blockDim];
        for (int t = 0; t < tokens; t++) {
            float scale = 1.0f;
            if (gate != null) {
                for (int thread = 0; thread < blockDim; thread++) {
                    double g = 0.0;
                    for (int c = thread; c < hidden; c += blockDim) {
                        g += (double) gate[c] * (double) load(x, t * hidden + c, dtype);
                    }
                    partial[thread] = g;
                }
                for (int half = blockDim / 2; half > 0; half >>= 1) {
                    for (int thread = 0; thread < half; thread++) {
                        partial[thread] += partial[thread + half];
                    }
                }
                scale = (float) (1.0 / (1.0 + Math.exp(-partial[0])));
            }
            for (int c = 0; c < hidden; c++) {
                int i = t * hidden + c;
                out[i] = out[i] + scale * shared[i];
            }
        }
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

    /** quantize_fp8_rows of bf16 rows. */
    static ByteBuffer quantizeFp8Rows(ByteBuffer src, int[] index, int rows, int hidden) {
        return quantizeFp8Rows(src, index, rows, hidden, DType.BF16);
    }

    /**
     * quantize_fp8_rows: {@code dst[r]} = the FP8 row of row {@code index[r]} (in {@code dtype});
     * per block of 128 channels the largest finite magnitude (at least 1e-4), codes of {@code x *
     * (448 / amax)} (a NaN's code from {@code x}, keeping its sign), the scale {@code amax / 448}
     * after the codes.
     */
    static ByteBuffer quantizeFp8Rows(
            ByteBuffer src, int[] index, int rows, int hidden, DType dtype) {
        int blocks = (hidden + 127) / 128;
        int rowBytes = hidden + 4 * blocks;
        ByteBuffer dst =
                ByteBuffer.allocateDirect(Math.max(1, rows * rowBytes))
                        .order(ByteOrder.LITTLE_ENDIAN);
        for (int r = 0; r < rows; r++) {
            int s = index[r] * hidden;
            int d = r * rowBytes;
            for (int b = 0; b < blocks; b++) {
                int start = b * 128;
                int len = Math.min(128, hidden - start);
                float m = 0f;
                for (int i = 0; i < len; i++) {
                    float a = Math.abs(load(src, s + start + i, dtype));
                    if (a > m && a < Float.POSITIVE_INFINITY) {
                        m = a;
                    }
                }
                float blockMax = Math.max(m, 1e-4f);
                float multiplier = 448f / blockMax;
                for (int i = 0; i < len; i++) {
                    float v = load(src, s + start + i, dtype);
                    dst.put(
                            d + start + i,
                            v != v
                                    ? (byte) (((Float.floatToRawIntBits(v) >>> 24) & 0x80) | 0x7f)
                                    : floatToE4m3(v * multiplier));
                }
                dst.putFloat(d + hidden + 4 * b, blockMax / 448f);
            }
        }
        return dst;
    }

    /** dequantize_fp8_rows into bf16 rows. */
    static ByteBuffer dequantizeFp8Rows(ByteBuffer src, int[] index, int rows, int hidden) {
        return dequantizeFp8Rows(src, index, rows, hidden, DType.BF16);
    }

    /**
     * dequantize_fp8_rows: {@code dst[r]} = FP8 row {@code index[r]} in {@code dtype}, each code
     * times its block's scale, a NaN code its own NaN.
     */
    static ByteBuffer dequantizeFp8Rows(
            ByteBuffer src, int[] index, int rows, int hidden, DType dtype) {
        int blocks = (hidden + 127) / 128;
        int rowBytes = hidden + 4 * blocks;
        ByteBuffer dst =
                ByteBuffer.allocateDirect(Math.max(1, rows * hidden * dtype.sizeBytes()))
                        .order(ByteOrder.LITTLE_ENDIAN);
        for (int r = 0; r < rows; r++) {
            int s = index[r] * rowBytes;
            for (int i = 0; i < hidden; i++) {
                float scale = src.getFloat(s + hidden + 4 * (i / 128));
                byte q = src.get(s + i);
                float value = (q & 0x7f) == 0x7f ? e4m3ToFloat(q) : e4m3ToFloat(q) * scale;
                store(dst, r * hidden + i, value, dtype);
            }
        }
        return dst;
    }

    /**
     * fp8_weights: the {@code [rows, cols]} weight in {@code dtype}, each code times its tile's
     * scale (a NaN code its own NaN), rounded to bf16.
     */
    static ByteBuffer fp8Weights(
            ByteBuffer codes, float[] scales, int rows, int cols, int block, DType dtype) {
        ByteBuffer out =
                ByteBuffer.allocateDirect(rows * cols * dtype.sizeBytes())
                        .order(ByteOrder.LITTLE_ENDIAN);
        int tileCols = (cols + block - 1) / block;
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                int i = r * cols + c;
                byte q = codes.get(i);
                float scale = scales[(r / block) * tileCols + c / block];
                float value = (q & 0x7f) == 0x7f ? e4m3ToFloat(q) : e4m3ToFloat(q) * scale;
                store(out, i, DType.bf16ToFloat(DType.floatToBf16(value)), dtype);
            }
        }
        return out;
    }

    /** What ll_group writes. */
    record Grouping(
            int[] groupIndex, int[] start, int[] entryRow, float[] entryWeight, int[] received) {}

    /**
     * ll_group: its block-wide exclusive scans are the running sums below, taken in the same row
     * order, so every list is the kernel's.
     */
    static Grouping llGroup(
            ByteBuffer recv,
            int regionRows,
            int rowBytes,
            int sources,
            int bound,
            int k,
            int slots) {
        int rows = sources * bound;
        int regionBytes = regionRows * rowBytes;
        int headerOffset = bound * rowBytes;
        int[] groupIndex = new int[Math.max(1, slots * rows)];
        int[] start = new int[rows + 1];
        int[] entryRow = new int[rows * k];
        float[] entryWeight = new float[rows * k];
        int[] received = new int[sources];
        for (int s = 0; s < sources; s++) {
            int h = s * regionBytes + headerOffset;
            received[s] = wellFormed(recv, h, bound, k, slots) ? recv.getInt(h) : -1;
        }
        int carry = 0;
        for (int i = 0; i < rows; i++) {
            int h = (i / bound) * regionBytes + headerOffset;
            int r = i % bound;
            int count = 0;
            if (r < received[i / bound]) {
                for (int q = 0; q < k; q++) {
                    count += recv.getInt(h + Integer.BYTES * (1 + r * k + q)) >= 0 ? 1 : 0;
                }
            }
            start[i] = carry;
            carry += count;
        }
        start[rows] = carry;
        for (int e = 0; e < slots; e++) {
            int taken = 0;
            for (int i = 0; i < rows; i++) {
                int h = (i / bound) * regionBytes + headerOffset;
                int r = i % bound;
                int choice = -1;
                int before = 0;
                if (r < received[i / bound]) {
                    for (int q = 0; q < k; q++) {
                        int slot = recv.getInt(h + Integer.BYTES * (1 + r * k + q));
                        if (slot == e) {
                            choice = q;
                        } else if (slot >= 0 && slot < e) {
                            before++;
                        }
                    }
                }
                if (choice >= 0) {
                    groupIndex[e * rows + taken] = (i / bound) * regionRows + r;
                    entryRow[start[i] + before] = e * rows + taken;
                    entryWeight[start[i] + before] =
                            Float.intBitsToFloat(
                                    recv.getInt(
                                            h + Integer.BYTES * (1 + bound * k + r * k + choice)));
                    taken++;
                }
            }
        }
        return new Grouping(groupIndex, start, entryRow, entryWeight, received);
    }

    /**
     * Whether the region header at {@code h} is one ll_group groups: a count within {@code
     * 0..bound}, and in each counted row slots within {@code -1..slots-1}, none named twice.
     */
    private static boolean wellFormed(ByteBuffer recv, int h, int bound, int k, int slots) {
        int count = recv.getInt(h);
        if (count < 0 || count > bound) {
            return false;
        }
        for (int r = 0; r < count; r++) {
            Set<Integer> named = new HashSet<>();
            for (int q = 0; q < k; q++) {
                int slot = recv.getInt(h + Integer.BYTES * (1 + r * k + q));
                if (slot < -1 || slot >= slots || (slot >= 0 && !named.add(slot))) {
                    return false;
                }
            }
        }
        return true;
    }

    /** load_elem: element {@code i} of {@code src} in {@code dtype}, as fp32. */
    private static float load(ByteBuffer src, int i, DType dtype) {
        return switch (dtype) {
            case FP32 -> src.getFloat(i * Float.BYTES);
            case FP16 -> fp16ToFloat(src.getShort(i * Short.BYTES));
            case BF16 -> DType.bf16ToFloat(src.getShort(i * Short.BYTES));
        };
    }

    /** store_elem: {@code v} as element {@code i} of {@code dst} in {@code dtype}. */
    private static void store(ByteBuffer dst, int i, float v, DType dtype) {
        switch (dtype) {
            case FP32 -> dst.putFloat(i * Float.BYTES, v);
            case FP16 -> dst.putShort(i * Short.BYTES, floatToFp16(v));
            case BF16 -> dst.putShort(i * Short.BYTES, DType.floatToBf16(v));
        }
    }

    /** float_to_fp16, statement by statement. */
    static short floatToFp16(float f) {
        int bits = Float.floatToRawIntBits(f);
        int sign = (bits >>> 16) & 0x8000;
        int a = bits & 0x7fffffff;
        if (a > 0x7f800000) {
            return (short) (sign | 0x7e00 | ((a & 0x7fffff) >>> 13));
        }
        if (a >= 0x477ff000) {
            return (short) (sign | 0x7c00);
        }
        if (a < 0x38800000) {
            return (short) (sign | (int) Math.rint(Float.intBitsToFloat(a) * 16777216.0f));
        }
        int h = ((((a >>> 23) - 112) << 10) | ((a & 0x7fffff) >>> 13));
        int rest = a & 0x1fff;
        if (rest > 0x1000 || (rest == 0x1000 && (h & 1) == 1)) {
            h++;
        }
        return (short) (sign | h);
    }

    /** fp16_to_float, statement by statement. */
    static float fp16ToFloat(short h) {
        int sign = (h & 0x8000) << 16;
        int m = h & 0x7fff;
        if (m >= 0x7c00) {
            return Float.intBitsToFloat(
                    sign | (m == 0x7c00 ? 0x7f800000 : 0x7fc00000 | ((m & 0x3ff) << 13)));
        }
        if (m >= 0x400) {
            return Float.intBitsToFloat(sign | ((m << 13) + 0x38000000));
        }
        return Float.intBitsToFloat(
                sign | Float.floatToRawIntBits((float) m * 5.9604644775390625e-8f));
    }

    /** float_to_e4m3, statement by statement. */
    private static byte floatToE4m3(float x) {
        int bits = Float.floatToRawIntBits(x);
        int sign = (bits >>> 24) & 0x80;
        float a = Math.abs(x);
        if (a != a) {
            return (byte) (sign | 0x7f);
        }
        float c = Math.min(a, 448f);
        if (c < 0.015625f) {
            return (byte) (sign | (int) Math.rint(c * 512f));
        }
        int cb = Float.floatToRawIntBits(c);
        int exponent = (cb >>> 23) - 127;
        int mantissa = cb & 0x7fffff;
        int rounded = mantissa >>> 20;
        int rest = mantissa & 0xfffff;
        if (rest > 0x80000 || (rest == 0x80000 && (rounded & 1) == 1)) {
            rounded++;
        }
        return (byte) (sign | (((exponent + 7) << 3) + rounded));
    }

    /** e4m3_to_float, statement by statement. */
    private static float e4m3ToFloat(byte q) {
        int magnitude = q & 0x7f;
        int sign = (q & 0x80) << 24;
        if (magnitude == 0x7f) {
            return Float.intBitsToFloat(sign | 0x7fc00000);
        }
        float value = Float.intBitsToFloat(magnitude << 20) * Float.intBitsToFloat(0x7b800000);
        return Float.intBitsToFloat(Float.floatToRawIntBits(value) | sign);
    }
}
