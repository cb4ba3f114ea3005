package moe.a2a.dispatch;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;

/**
 * Element types of token rows on the wire, with conversion to and from fp32. Buffers passed here
 * must be little-endian; indexes are absolute and positions are left alone.
 */
public enum DType {
    BF16(2),
    FP16(2),
    FP32(4);

    private final int sizeBytes;

    DType(int sizeBytes) {
        this.sizeBytes = sizeBytes;
    }

    /** Bytes per element. */
    public int sizeBytes() {
        return sizeBytes;
    }

    /** Reads {@code n} elements starting at byte {@code srcByte} into {@code dst[dstIndex..]}. */
    public void decode(ByteBuffer src, int srcByte, FloatBuffer dst, int dstIndex, int n) {
        for (int i = 0; i < n; i++) {
            dst.put(dstIndex + i, get(src, srcByte + i * sizeBytes));
        }
    }

    /** Reads {@code n} elements starting at byte {@code srcByte} into {@code dst[dstIndex..]}. */
    public void decode(ByteBuffer src, int srcByte, float[] dst, int dstIndex, int n) {
        if (this == BF16) {
            for (int i = 0; i < n; i++) {
                dst[dstIndex + i] = Float.intBitsToFloat(src.getShort(srcByte + 2 * i) << 16);
            }
            return;
        }
        for (int i = 0; i < n; i++) {
            dst[dstIndex + i] = get(src, srcByte + i * sizeBytes);
        }
    }

    /**
     * Adds {@code n} elements starting at byte {@code srcByte} into {@code dst[dstIndex..]}, with
     * absolute reads: no view buffer is created, so the hot path allocates nothing.
     */
    public void accumulate(ByteBuffer src, int srcByte, float[] dst, int dstIndex, int n) {
        switch (this) {
            case BF16:
                for (int i = 0; i < n; i++) {
                    dst[dstIndex + i] += Float.intBitsToFloat(src.getShort(srcByte + 2 * i) << 16);
                }
                break;
            case FP16:
                for (int i = 0; i < n; i++) {
                    dst[dstIndex + i] += halfToFloat(src.getShort(srcByte + 2 * i));
                }
                break;
            default:
                for (int i = 0; i < n; i++) {
                    dst[dstIndex + i] += src.getFloat(srcByte + 4 * i);
                }
        }
    }

    /** Writes {@code src[srcIndex..srcIndex+n)} as this dtype starting at byte {@code dstByte}. */
    public void encode(float[] src, int srcIndex, int n, ByteBuffer dst, int dstByte) {
        for (int i = 0; i < n; i++) {
            put(dst, dstByte + i * sizeBytes, src[srcIndex + i]);
        }
    }

    /** Writes {@code src[srcIndex..srcIndex+n)} as this dtype starting at byte {@code dstByte}. */
    public void encode(FloatBuffer src, int srcIndex, int n, ByteBuffer dst, int dstByte) {
        for (int i = 0; i < n; i++) {
            put(dst, dstByte + i * sizeBytes, src.get(srcIndex + i));
        }
    }

    /** The element at byte {@code index}, as fp32. */
    public float get(ByteBuffer buf, int index) {
        switch (this) {
            case BF16:
                return bf16ToFloat(buf.getShort(index));
            case FP16:
                return halfToFloat(buf.getShort(index));
            default:
                return buf.getFloat(index);
        }
    }

    /** Stores {@code value} rounded to this dtype (round to nearest even) at byte {@code index}. */
    public void put(ByteBuffer buf, int index, float value) {
        switch (this) {
            case BF16:
                buf.putShort(index, floatToBf16(value));
                break;
            case FP16:
                buf.putShort(index, floatToHalf(value));
                break;
            default:
                buf.putFloat(index, value);
        }
    }

    /** {@code value} rounded to this dtype and widened back to fp32. */
    public float round(float value) {
        switch (this) {
            case BF16:
                return bf16ToFloat(floatToBf16(value));
            case FP16:
                return halfToFloat(floatToHalf(value));
            default:
                return value;
        }
    }

    public static float bf16ToFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xffff) << 16);
    }

    public static short floatToBf16(float value) {
        final int bits = Float.floatToRawIntBits(value);
        if ((bits & 0x7fffffff) > 0x7f800000) {
            return (short) ((bits >>> 16) | 0x40); // quiet NaN, sign kept
        }
        final int roundingBias = 0x7fff + ((bits >>> 16) & 1);
        return (short) ((bits + roundingBias) >>> 16);
    }

    public static float halfToFloat(short half) {
        final int h = half & 0xffff;
        final int sign = (h & 0x8000) << 16;
        final int exp = (h >>> 10) & 0x1f;
        final int mant = h & 0x3ff;
        if (exp == 0) {
            final float magnitude = mant * 0x1p-24f;
            return sign != 0 ? -magnitude : magnitude;
        }
        if (exp == 31) {
            return Float.intBitsToFloat(sign | 0x7f800000 | (mant << 13));
        }
        return Float.intBitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
    }

    public static short floatToHalf(float value) {
        final int bits = Float.floatToRawIntBits(value);
        final int sign = (bits >>> 16) & 0x8000;
        final int abs = bits & 0x7fffffff;
        if (abs >= 0x7f800000) {
            return (short) (sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0));
        }
        if (abs >= 0x477ff000) { // 65520 and above round to infinity
            return (short) (sign | 0x7c00);
        }
        if (abs < 0x38800000) { // below 2^-14: subnormal half
            if (abs < 0x33000000) { // at most 2^-25 (a tie with zero): rounds to zero
                return (short) sign;
            }
            final int shift = 126 - (abs >>> 23);
            final int mant = (abs & 0x7fffff) | 0x800000;
            int rounded = mant >>> shift;
            final int rem = mant & ((1 << shift) - 1);
            final int halfway = 1 << (shift - 1);
            if (rem > halfway || (rem == halfway && (rounded & 1) == 1)) {
                rounded++;
            }
            return (short) (sign | rounded);
        }
        int rounded = (abs - 0x38000000) >>> 13;
        final int rem = abs & 0x1fff;
        if (rem > 0x1000 || (rem == 0x1000 && (rounded & 1) == 1)) {
            rounded++;
        }
        return (short) (sign | rounded);
    }
}
