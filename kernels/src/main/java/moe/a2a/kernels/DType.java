package moe.a2a.kernels;

import java.lang.foreign.MemorySegment;
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
     * Converts {@code n} elements at byte {@code srcOffset} of {@code src} into fp32 at byte {@code
     * dstOffset} of {@code dst}, with the row kernels. Both segments little-endian.
     */
    public void decode(
            MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int n) {
        RowKernels.decode(this, src, srcOffset, dst, dstOffset, n);
    }

    /**
     * Adds {@code n} elements at byte {@code srcOffset} of {@code src} to the fp32 elements at byte
     * {@code dstOffset} of {@code dst}, with the row kernels: the source's sum in combine.
     */
    public void accumulate(
            MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int n) {
        RowKernels.accumulate(this, src, srcOffset, dst, dstOffset, n);
    }

    /**
     * Writes {@code n} fp32 elements at byte {@code srcOffset} of {@code src} as this dtype at byte
     * {@code dstOffset} of {@code dst} (round to nearest even), with the row kernels.
     */
    public void encode(
            MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int n) {
        RowKernels.encode(this, src, srcOffset, dst, dstOffset, n);
    }

    /**
     * {@code dst[i] = op(dst[i], src[i])} over {@code n} elements of this dtype, computed in fp32
     * and rounded once, with the row kernels: one step of all-reduce and reduce-scatter.
     */
    public void reduce(
            ReduceOp op,
            MemorySegment src,
            long srcOffset,
            MemorySegment dst,
            long dstOffset,
            int n) {
        RowKernels.reduce(this, op, src, srcOffset, dst, dstOffset, n);
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
        return Float.float16ToFloat(half);
    }

    /** {@code value} rounded to IEEE binary16, to nearest even; NaN stays NaN with its sign. */
    public static short floatToHalf(float value) {
        return Float.floatToFloat16(value);
    }
}
