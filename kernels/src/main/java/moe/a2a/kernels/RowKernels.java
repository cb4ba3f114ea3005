package moe.a2a.kernels;

import java.lang.foreign.MemorySegment;

/**
 * The row kernels of the data path: dtype conversion, FP8 quantization, weighted sums and the row
 * gather. Every caller goes through here; it runs the Vector API versions when the boot layer has
 * {@code jdk.incubator.vector} (and the host's vectors are 256 bits or wider) and the scalar twins
 * otherwise, which are bit-for-bit equal, so the choice changes speed only. Without the module, no
 * Vector API class is loaded.
 *
 * <p>Segments may be heap or off-heap, but the data path passes off-heap ones only: once the vector
 * kernels have run on heap segments, C2's profiles are mixed and every later call runs several
 * times slower, off-heap ones too, JVM-wide ({@code accumulateBf16} on 7168 channels measured 0.75
 * µs per row off-heap alone, 4.8 µs after heap calls). Elements are little-endian and need no
 * alignment. Offsets are in bytes, counts in elements. Nothing is checked beyond the segments' own
 * bounds checks: an access out of a segment throws {@link IndexOutOfBoundsException}, possibly
 * after part of the output has been written. Source and destination ranges must not overlap (except
 * as noted). No method allocates. Stateless and thread-safe.
 */
public final class RowKernels {
    /** Channels that share one FP8 scale ({@link Fp8RowLayout#BLOCK}). */
    public static final int FP8_BLOCK = Fp8RowLayout.BLOCK;

    private static final boolean VECTOR_MODULE =
            ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent();
    private static final boolean VECTORIZED = VECTOR_MODULE && VectorKernels.supported();
    private static final String IMPLEMENTATION =
            VECTORIZED
                    ? VectorKernels.description()
                    : VECTOR_MODULE
                            ? "scalar ("
                                    + VectorKernels.description()
                                    + " is too narrow: 256 needed)"
                            : "scalar (start the JVM with --add-modules=jdk.incubator.vector)";

    /**
     * Below this many elements the reductions run their scalar twin even when vectorized: a small
     * collective calls them too rarely for C2 to compile the Vector API loop soon, and until then
     * it runs interpreted, far slower than scalar code (a cold 1 KiB all-reduce of 4 in-process
     * ranks on a busy 2-core host: 2.9 ms vectorized, 0.3 ms scalar; 82 µs either way once
     * compiled), while at this size a compiled scalar loop costs a few microseconds at most.
     */
    static final int REDUCE_VECTOR_MIN = 4096;

    private RowKernels() {}

    /**
     * Whether the Vector API versions run: the boot layer has {@code jdk.incubator.vector} and the
     * host's preferred vectors are 256 bits or wider.
     */
    public static boolean vectorized() {
        return VECTORIZED;
    }

    /** Which implementation runs, in a few words, for the start-up log. */
    public static String implementation() {
        return IMPLEMENTATION;
    }

    /** Bytes of an FP8 row of {@code hidden} channels ({@link Fp8RowLayout#rowBytes}). */
    public static int fp8RowBytes(int hidden) {
        return Fp8RowLayout.rowBytes(hidden);
    }

    /**
     * Widens {@code n} values of {@code type} at {@code src} to fp32 at {@code dst}; exact. A NaN
     * half becomes a quiet NaN that keeps its sign and payload.
     */
    public static void decode(
            DType type,
            MemorySegment src,
            long srcOffset,
            MemorySegment dst,
            long dstOffset,
            int n) {
        if (type == DType.FP32) {
            MemorySegment.copy(src, srcOffset, dst, dstOffset, (long) n * Float.BYTES);
        } else if (VECTORIZED) {
            if (type == DType.BF16) {
                VectorBf16.decode(src, srcOffset, dst, dstOffset, n);
            } else {
                VectorFp16.decode(src, srcOffset, dst, dstOffset, n);
            }
        } else {
            ScalarKernels.decode(type, src, srcOffset, dst, dstOffset, n);
        }
    }

    /**
     * Adds {@code n} values of {@code type} at {@code src} to the fp32 values at {@code dst}, one
     * rounding (fp32 as {@link #axpy} with weight 1). A NaN at {@code dst} stays (quieted),
     * whatever is added: Java leaves which NaN a sum of two gives to the compiled code, so it is
     * pinned here.
     */
    public static void accumulate(
            DType type,
            MemorySegment src,
            long srcOffset,
            MemorySegment dst,
            long dstOffset,
            int n) {
        if (type == DType.FP32) {
            axpy(1f, src, srcOffset, dst, dstOffset, n);
        } else if (VECTORIZED) {
            if (type == DType.BF16) {
                VectorBf16.accumulate(src, srcOffset, dst, dstOffset, n);
            } else {
                VectorFp16.accumulate(src, srcOffset, dst, dstOffset, n);
            }
        } else {
            ScalarKernels.accumulate(type, src, srcOffset, dst, dstOffset, n);
        }
    }

    /**
     * Rounds {@code n} fp32 values at {@code src} to {@code type} at {@code dst}: to nearest even,
     * overflow to infinity. NaN becomes a quiet NaN that keeps its sign and top payload bits: in
     * bf16 {@code (bits >>> 16) | 0x40}; in IEEE half, as {@link Float#floatToFloat16}, the top 10
     * (what x86's F16C gives).
     */
    public static void encode(
            DType type,
            MemorySegment src,
            long srcOffset,
            MemorySegment dst,
            long dstOffset,
            int n) {
        if (type == DType.FP32) {
            MemorySegment.copy(src, srcOffset, dst, dstOffset, (long) n * Float.BYTES);
        } else if (VECTORIZED) {
            if (type == DType.BF16) {
                VectorBf16.encode(src, srcOffset, dst, dstOffset, n);
            } else {
                VectorFp16.encode(src, srcOffset, dst, dstOffset, n);
            }
        } else {
            ScalarKernels.encode(type, src, srcOffset, dst, dstOffset, n);
        }
    }

    /**
     * {@code y[i] = y[i] + w * x[i]} over {@code n} fp32 values, rounded after the product and
     * after the sum (no fused multiply-add). {@code x} and {@code y} may be the same range. NaN is
     * pinned as in {@link #accumulate}: a NaN {@code y[i]} stays (quieted), else a NaN {@code w}
     * gives {@code w} (quieted).
     */
    public static void axpy(
            float w, MemorySegment x, long xOffset, MemorySegment y, long yOffset, int n) {
        if (VECTORIZED) {
            VectorKernels.axpy(w, x, xOffset, y, yOffset, n);
        } else {
            ScalarKernels.axpy(w, x, xOffset, y, yOffset, n);
        }
    }

    private static void reduceFp32(
            ReduceOp op,
            MemorySegment src,
            long srcOffset,
            MemorySegment dst,
            long dstOffset,
            int n) {
        if (VECTORIZED && n >= REDUCE_VECTOR_MIN) {
            VectorKernels.reduceFp32(op, src, srcOffset, dst, dstOffset, n);
        } else {
            ScalarKernels.reduceFp32(op, src, srcOffset, dst, dstOffset, n);
        }
    }

    /**
     * {@code dst[i] = op(dst[i], src[i])} over {@code n} values of {@code type}: both widened to
     * fp32, the result rounded once to {@code type} as {@link #encode} does. {@code src} and {@code
     * dst} may be the same range.
     */
    public static void reduce(
            DType type,
            ReduceOp op,
            MemorySegment src,
            long srcOffset,
            MemorySegment dst,
            long dstOffset,
            int n) {
        if (type == DType.FP32) {
            reduceFp32(op, src, srcOffset, dst, dstOffset, n);
        } else if (VECTORIZED && n >= REDUCE_VECTOR_MIN) {
            if (type == DType.BF16) {
                VectorBf16.reduce(op, src, srcOffset, dst, dstOffset, n);
            } else {
                VectorFp16.reduce(op, src, srcOffset, dst, dstOffset, n);
            }
        } else {
            ScalarKernels.reduce(type, op, src, srcOffset, dst, dstOffset, n);
        }
    }

    /**
     * Quantizes a row of {@code hidden} fp32 values at {@code src} to an FP8 row at {@code dst}
     * ({@link Fp8RowLayout}, {@link #fp8RowBytes} bytes). Per block of 128 channels: {@code amax}
     * is the largest finite {@code |x|} (NaN and infinities do not count), at least {@code 1e-4};
     * the scale is {@code amax / 448}; each code is {@link ScalarKernels#floatToE4m3} of {@code x *
     * (448 / amax)}: round to nearest even, ±infinity saturates to ±448, NaN gives the NaN code
     * {@code S.1111.111} with its sign.
     */
    public static void quantizeFp8(
            MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int hidden) {
        if (VECTORIZED) {
            VectorFp8.quantize(src, srcOffset, dst, dstOffset, hidden);
        } else {
            ScalarKernels.quantizeFp8(src, srcOffset, dst, dstOffset, hidden);
        }
    }

    /**
     * {@link #quantizeFp8} of a bf16 row, without staging it as fp32: the same codes and scales as
     * quantizing the row's fp32 widening.
     */
    public static void quantizeFp8FromBf16(
            MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int hidden) {
        if (VECTORIZED) {
            VectorFp8.quantizeFromBf16(src, srcOffset, dst, dstOffset, hidden);
        } else {
            ScalarKernels.quantizeFp8FromBf16(src, srcOffset, dst, dstOffset, hidden);
        }
    }

    /**
     * Expands an FP8 row of {@code hidden} channels at {@code src} to fp32 at {@code dst}: {@link
     * ScalarKernels#e4m3ToFloat} of each code times its block's scale, one rounding; a NaN code
     * gives a quiet NaN with the code's sign, whatever the scale.
     */
    public static void dequantizeFp8(
            MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int hidden) {
        if (VECTORIZED) {
            VectorFp8.dequantize(src, srcOffset, dst, dstOffset, hidden);
        } else {
            ScalarKernels.dequantizeFp8(src, srcOffset, dst, dstOffset, hidden);
        }
    }

    /**
     * The pack step: for each {@code i} in {@code [from, to)}, copies {@code rowBytes} bytes from
     * {@code src} at {@code rowIndex[i] * srcRowStride + srcRowOffset} to {@code dst} at {@code
     * dstOffset + (i - from) * dstRowStride}. Rows are taken as they are (any dtype). {@code
     * rowIndex} out of its bounds throws {@link ArrayIndexOutOfBoundsException}.
     */
    public static void gatherRows(
            MemorySegment src,
            int[] rowIndex,
            int from,
            int to,
            long srcRowStride,
            long srcRowOffset,
            int rowBytes,
            MemorySegment dst,
            long dstOffset,
            long dstRowStride) {
        for (int i = from; i < to; i++) {
            MemorySegment.copy(
                    src,
                    rowIndex[i] * srcRowStride + srcRowOffset,
                    dst,
                    dstOffset + (i - from) * dstRowStride,
                    rowBytes);
        }
    }
}
