package moe.a2a.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The row kernels as plain scalar loops: the reference twins that the Vector API versions are held
 * bit-equal to, and what {@link RowKernels} runs when the JVM lacks {@code jdk.incubator.vector}
 * (or its vectors are narrower than 256 bits). Each method has the contract of the {@link
 * RowKernels} method of the same name. Stateless.
 */
public final class ScalarKernels {
    static final ValueLayout.OfShort SHORT =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfFloat FLOAT =
            ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfByte BYTE = ValueLayout.JAVA_BYTE;

    /** The largest finite E4M3 magnitude: 1.75 × 2^8. */
    static final float E4M3_MAX = 448f;

    /** A block's amax is at least this (as in DeepEP), so an all-zero block has a finite scale. */
    static final float AMAX_FLOOR = 1e-4f;

    private ScalarKernels() {}

    /** Widens {@code n} values of {@code half} (bf16 or fp16) to fp32. */
    public static void decode(
            DType half,
            MemorySegment src,
            long srcOffset,
            MemorySegment dst,
            long dstOffset,
            int n) {
        final boolean bf16 = isBf16(half);
        for (int i = 0; i < n; i++) {
            dst.set(FLOAT, dstOffset + 4L * i, toFloat(bf16, src.get(SHORT, srcOffset + 2L * i)));
        }
    }

    public static void accumulate(
            DType half,
            MemorySegment src,
            long srcOffset,
            MemorySegment dst,
            long dstOffset,
            int n) {
        final boolean bf16 = isBf16(half);
        for (int i = 0; i < n; i++) {
            final long at = dstOffset + 4L * i;
            final float sum = dst.get(FLOAT, at);
            final float x = toFloat(bf16, src.get(SHORT, srcOffset + 2L * i));
            dst.set(FLOAT, at, nanFirst(sum, sum + x));
        }
    }

    public static void encode(
            DType half,
            MemorySegment src,
            long srcOffset,
            MemorySegment dst,
            long dstOffset,
            int n) {
        final boolean bf16 = isBf16(half);
        for (int i = 0; i < n; i++) {
            dst.set(SHORT, dstOffset + 2L * i, fromFloat(bf16, src.get(FLOAT, srcOffset + 4L * i)));
        }
    }

    public static void reduce(
            DType half,
            ReduceOp op,
            MemorySegment src,
            long srcOffset,
            MemorySegment dst,
            long dstOffset,
            int n) {
        final boolean bf16 = isBf16(half);
        for (int i = 0; i < n; i++) {
            final long d = dstOffset + 2L * i;
            final float x = toFloat(bf16, src.get(SHORT, srcOffset + 2L * i));
            dst.set(SHORT, d, fromFloat(bf16, reduce(op, toFloat(bf16, dst.get(SHORT, d)), x)));
        }
    }

    public static void axpy(
            float w, MemorySegment x, long xOffset, MemorySegment y, long yOffset, int n) {
        // a NaN weight makes every product that NaN, quieted, whatever x holds
        final boolean nanWeight = Float.isNaN(w);
        final float quietWeight = quiet(w);
        for (int i = 0; i < n; i++) {
            final long at = yOffset + 4L * i;
            final float yi = y.get(FLOAT, at);
            final float product = nanWeight ? quietWeight : w * x.get(FLOAT, xOffset + 4L * i);
            y.set(FLOAT, at, nanFirst(yi, yi + product));
        }
    }

    public static void quantizeFp8(
            MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int hidden) {
        for (int block = 0; block < Fp8RowLayout.blocks(hidden); block++) {
            final int start = block * Fp8RowLayout.BLOCK;
            final int len = Math.min(Fp8RowLayout.BLOCK, hidden - start);
            final long from = srcOffset + 4L * start;
            final float amax = Math.max(amaxF32(src, from, len), AMAX_FLOOR);
            encodeE4m3(src, from, dst, dstOffset + start, len, multiplier(amax));
            dst.set(FLOAT, dstOffset + Fp8RowLayout.scaleOffset(hidden, block), scale(amax));
        }
    }

    public static void quantizeFp8FromBf16(
            MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int hidden) {
        for (int block = 0; block < Fp8RowLayout.blocks(hidden); block++) {
            final int start = block * Fp8RowLayout.BLOCK;
            final int len = Math.min(Fp8RowLayout.BLOCK, hidden - start);
            final long from = srcOffset + 2L * start;
            final float amax = Math.max(amaxBf16(src, from, len), AMAX_FLOOR);
            encodeE4m3FromBf16(src, from, dst, dstOffset + start, len, multiplier(amax));
            dst.set(FLOAT, dstOffset + Fp8RowLayout.scaleOffset(hidden, block), scale(amax));
        }
    }

    public static void dequantizeFp8(
            MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int hidden) {
        for (int block = 0; block < Fp8RowLayout.blocks(hidden); block++) {
            final int start = block * Fp8RowLayout.BLOCK;
            final int len = Math.min(Fp8RowLayout.BLOCK, hidden - start);
            final float scale = src.get(FLOAT, srcOffset + Fp8RowLayout.scaleOffset(hidden, block));
            dequantizeE4m3(src, srcOffset + start, dst, dstOffset + 4L * start, len, scale);
        }
    }

    /**
     * The value of E4M3 code {@code q} (OCP {@code fn}: bias 7, subnormals {@code m × 2^-9}, no
     * infinities, NaN at {@code S.1111.111}); NaN codes give a quiet NaN with the code's sign.
     */
    public static float e4m3ToFloat(byte q) {
        final int magnitude = q & 0x7f;
        final int sign = (q & 0x80) << 24;
        if (magnitude == 0x7f) {
            return Float.intBitsToFloat(sign | 0x7fc00000);
        }
        // the code's exponent and mantissa land in fp32's, so that 2^120 rebiases normals and
        // subnormals alike, exactly
        final float value = Float.intBitsToFloat(magnitude << 20) * 0x1p120f;
        return Float.intBitsToFloat(Float.floatToRawIntBits(value) | sign);
    }

    /**
     * {@code x} as E4M3, rounded to nearest even and saturating: magnitudes above 448, infinities
     * included, give ±448 ({@code 0x7e}/{@code 0xfe}); NaN gives {@code S.1111.111} with its sign;
     * the sign of zero (and of what rounds to zero) is kept.
     */
    public static byte floatToE4m3(float x) {
        final int bits = Float.floatToRawIntBits(x);
        final int sign = (bits >>> 24) & 0x80;
        final float abs = Math.abs(x);
        if (Float.isNaN(abs)) {
            return (byte) (sign | 0x7f);
        }
        final float clamped = Math.min(abs, E4M3_MAX);
        if (clamped < 0x1p-6f) {
            // subnormal codes are multiples of 2^-9; the product is exact, rint rounds half even
            return (byte) (sign | (int) Math.rint(clamped * 0x1p9f));
        }
        final int absBits = Float.floatToRawIntBits(clamped);
        final int exponent = (absBits >>> 23) - 127;
        final int mantissa = absBits & 0x7fffff;
        int rounded = mantissa >>> 20;
        final int rest = mantissa & 0xfffff;
        if (rest > 0x80000 || (rest == 0x80000 && (rounded & 1) == 1)) {
            rounded++; // a carry out of the mantissa steps the exponent, as it should
        }
        return (byte) (sign | (((exponent + 7) << 3) + rounded));
    }

    public static void reduceFp32(
            ReduceOp op,
            MemorySegment src,
            long srcOffset,
            MemorySegment dst,
            long dstOffset,
            int n) {
        for (int i = 0; i < n; i++) {
            long d = dstOffset + 4L * i;
            float x = src.get(FLOAT, srcOffset + 4L * i);
            dst.set(FLOAT, d, reduce(op, dst.get(FLOAT, d), x));
        }
    }

    /** Whether {@code half} is bf16 rather than IEEE half; fp32 is not a 16-bit type. */
    static boolean isBf16(DType half) {
        if (half == DType.FP32) {
            throw new IllegalArgumentException("half: FP32 (expected: BF16 or FP16)");
        }
        return half == DType.BF16;
    }

    static float toFloat(boolean bf16, short h) {
        return bf16 ? bf16ToFloat(h) : fp16ToFloat(h);
    }

    static short fromFloat(boolean bf16, float x) {
        return bf16 ? floatToBf16(x) : floatToFp16(x);
    }

    static float bf16ToFloat(short h) {
        return Float.intBitsToFloat(h << 16);
    }

    /** Round to nearest even; NaN becomes a quiet NaN with its sign and top payload bits. */
    static short floatToBf16(float x) {
        final int bits = Float.floatToRawIntBits(x);
        if ((bits & 0x7fffffff) > 0x7f800000) {
            return (short) ((bits >>> 16) | 0x40);
        }
        return (short) ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16);
    }

    /**
     * {@link Float#float16ToFloat} with NaN pinned: Float leaves NaN bits to the platform (x86's
     * F16C quiets signaling NaNs, the plain Java code does not), so NaN here is always quiet, with
     * its sign and payload, as F16C gives.
     */
    static float fp16ToFloat(short h) {
        if ((h & 0x7fff) > 0x7c00) {
            return Float.intBitsToFloat(((h & 0x8000) << 16) | 0x7fc00000 | ((h & 0x3ff) << 13));
        }
        return Float.float16ToFloat(h);
    }

    /**
     * {@link Float#floatToFloat16} (round to nearest even, overflow to infinity) with NaN pinned as
     * in {@link #fp16ToFloat}: a quiet NaN with the sign and the top 10 payload bits.
     */
    static short floatToFp16(float x) {
        final int bits = Float.floatToRawIntBits(x);
        if ((bits & 0x7fffffff) > 0x7f800000) {
            return (short) (((bits >>> 16) & 0x8000) | 0x7e00 | ((bits >>> 13) & 0x3ff));
        }
        return Float.floatToFloat16(x);
    }

    /**
     * {@code a op b}, NaN pinned: {@code a} quieted if it is NaN, else {@code b} quieted if it is,
     * as the vector twin gives.
     */
    static float reduce(ReduceOp op, float a, float b) {
        return nanFirst(a, nanFirst(b, op.apply(a, b)));
    }

    /**
     * {@code result}, unless {@code first} is NaN: then {@code first}, quieted. x86 and Arm give
     * that already when only {@code first} is NaN; when both operands are NaN, Java leaves the
     * payload to the compiled code's operand order, so it is pinned here.
     */
    static float nanFirst(float first, float result) {
        return Float.isNaN(first) ? quiet(first) : result;
    }

    static float quiet(float x) {
        return Float.intBitsToFloat(Float.floatToRawIntBits(x) | 0x400000);
    }

    /** The scale a block of absolute maximum {@code amax} is sent with. */
    static float scale(float amax) {
        return amax / E4M3_MAX;
    }

    /** What a block's values are multiplied by before rounding to E4M3. */
    static float multiplier(float amax) {
        return E4M3_MAX / amax;
    }

    /** {@code max(amax, |x|)} over finite {@code x} only: NaN and infinities do not count. */
    static float finiteMax(float amax, float x) {
        final float abs = Math.abs(x);
        return abs > amax && abs < Float.POSITIVE_INFINITY ? abs : amax;
    }

    /** The largest finite magnitude among {@code len} fp32 values, or 0. */
    static float amaxF32(MemorySegment src, long srcOffset, int len) {
        float amax = 0f;
        for (int i = 0; i < len; i++) {
            amax = finiteMax(amax, src.get(FLOAT, srcOffset + 4L * i));
        }
        return amax;
    }

    /** The largest finite magnitude among {@code len} bf16 values, or 0. */
    static float amaxBf16(MemorySegment src, long srcOffset, int len) {
        float amax = 0f;
        for (int i = 0; i < len; i++) {
            amax = finiteMax(amax, bf16ToFloat(src.get(SHORT, srcOffset + 2L * i)));
        }
        return amax;
    }

    static void encodeE4m3FromBf16(
            MemorySegment src,
            long srcOffset,
            MemorySegment dst,
            long dstOffset,
            int len,
            float multiplier) {
        for (int i = 0; i < len; i++) {
            final float x = bf16ToFloat(src.get(SHORT, srcOffset + 2L * i));
            dst.set(BYTE, dstOffset + i, floatToE4m3(x * multiplier));
        }
    }

    static void encodeE4m3(
            MemorySegment src,
            long srcOffset,
            MemorySegment dst,
            long dstOffset,
            int len,
            float multiplier) {
        for (int i = 0; i < len; i++) {
            final float x = src.get(FLOAT, srcOffset + 4L * i);
            dst.set(BYTE, dstOffset + i, floatToE4m3(x * multiplier));
        }
    }

    static void dequantizeE4m3(
            MemorySegment src,
            long srcOffset,
            MemorySegment dst,
            long dstOffset,
            int len,
            float scale) {
        for (int i = 0; i < len; i++) {
            final byte q = src.get(BYTE, srcOffset + i);
            // a NaN code gives its own NaN, whatever the scale
            final float value = (q & 0x7f) == 0x7f ? e4m3ToFloat(q) : e4m3ToFloat(q) * scale;
            dst.set(FLOAT, dstOffset + 4L * i, value);
        }
    }
}
