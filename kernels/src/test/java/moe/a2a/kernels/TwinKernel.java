package moe.a2a.kernels;

import java.lang.foreign.MemorySegment;
import java.util.Random;

/**
 * One kernel of {@link ScalarKernels} and {@link VectorKernels}, run either way: how big its rows
 * are and what goes in them.
 */
enum TwinKernel {
    DECODE_BF16(2, 4),
    ACCUMULATE_BF16(2, 4),
    ENCODE_BF16(4, 2),
    DECODE_FP16(2, 4),
    ACCUMULATE_FP16(2, 4),
    ENCODE_FP16(4, 2),
    AXPY(4, 4),
    QUANTIZE_FP8(4, 0),
    QUANTIZE_FP8_FROM_BF16(2, 0),
    DEQUANTIZE_FP8(0, 4),
    REDUCE_SUM_FP32(4, 4),
    REDUCE_MAX_FP32(4, 4),
    REDUCE_MIN_FP32(4, 4),
    REDUCE_SUM_BF16(2, 2),
    REDUCE_MAX_BF16(2, 2),
    REDUCE_MIN_BF16(2, 2),
    REDUCE_SUM_FP16(2, 2),
    REDUCE_MAX_FP16(2, 2),
    REDUCE_MIN_FP16(2, 2);

    private final int srcElementBytes;
    private final int dstElementBytes;

    TwinKernel(int srcElementBytes, int dstElementBytes) {
        this.srcElementBytes = srcElementBytes;
        this.dstElementBytes = dstElementBytes;
    }

    long srcBytes(int n) {
        return srcElementBytes == 0 ? Fp8RowLayout.rowBytes(n) : (long) srcElementBytes * n;
    }

    long dstBytes(int n) {
        return dstElementBytes == 0 ? Fp8RowLayout.rowBytes(n) : (long) dstElementBytes * n;
    }

    void fillSrc(MemorySegment src, long offset, int n, Random random) {
        switch (this) {
            case DECODE_BF16,
                    ACCUMULATE_BF16,
                    DECODE_FP16,
                    ACCUMULATE_FP16,
                    REDUCE_SUM_BF16,
                    REDUCE_MAX_BF16,
                    REDUCE_MIN_BF16,
                    REDUCE_SUM_FP16,
                    REDUCE_MAX_FP16,
                    REDUCE_MIN_FP16 ->
                    KernelInputs.fillShorts(src, offset, n, random);
            case QUANTIZE_FP8 -> KernelInputs.fillRow(src, offset, n, random);
            case QUANTIZE_FP8_FROM_BF16 -> {
                final MemorySegment row = MemorySegment.ofArray(new float[n]);
                KernelInputs.fillRow(row, 0, n, random);
                ScalarKernels.encodeBf16(row, 0, src, offset, n);
            }
            case DEQUANTIZE_FP8 -> KernelInputs.fillFp8Row(src, offset, n, random);
            default -> KernelInputs.fillFloats(src, offset, n, random);
        }
    }

    void run(
            boolean vector,
            float w,
            MemorySegment src,
            long srcOffset,
            MemorySegment dst,
            long dstOffset,
            int n) {
        switch (this) {
            case DECODE_BF16 -> {
                if (vector) {
                    VectorKernels.decodeBf16(src, srcOffset, dst, dstOffset, n);
                } else {
                    ScalarKernels.decodeBf16(src, srcOffset, dst, dstOffset, n);
                }
            }
            case ACCUMULATE_BF16 -> {
                if (vector) {
                    VectorKernels.accumulateBf16(src, srcOffset, dst, dstOffset, n);
                } else {
                    ScalarKernels.accumulateBf16(src, srcOffset, dst, dstOffset, n);
                }
            }
            case ENCODE_BF16 -> {
                if (vector) {
                    VectorKernels.encodeBf16(src, srcOffset, dst, dstOffset, n);
                } else {
                    ScalarKernels.encodeBf16(src, srcOffset, dst, dstOffset, n);
                }
            }
            case DECODE_FP16 -> {
                if (vector) {
                    VectorKernels.decodeFp16(src, srcOffset, dst, dstOffset, n);
                } else {
                    ScalarKernels.decodeFp16(src, srcOffset, dst, dstOffset, n);
                }
            }
            case ACCUMULATE_FP16 -> {
                if (vector) {
                    VectorKernels.accumulateFp16(src, srcOffset, dst, dstOffset, n);
                } else {
                    ScalarKernels.accumulateFp16(src, srcOffset, dst, dstOffset, n);
                }
            }
            case ENCODE_FP16 -> {
                if (vector) {
                    VectorKernels.encodeFp16(src, srcOffset, dst, dstOffset, n);
                } else {
                    ScalarKernels.encodeFp16(src, srcOffset, dst, dstOffset, n);
                }
            }
            case AXPY -> {
                if (vector) {
                    VectorKernels.axpy(w, src, srcOffset, dst, dstOffset, n);
                } else {
                    ScalarKernels.axpy(w, src, srcOffset, dst, dstOffset, n);
                }
            }
            case QUANTIZE_FP8 -> {
                if (vector) {
                    VectorKernels.quantizeFp8(src, srcOffset, dst, dstOffset, n);
                } else {
                    ScalarKernels.quantizeFp8(src, srcOffset, dst, dstOffset, n);
                }
            }
            case QUANTIZE_FP8_FROM_BF16 -> {
                if (vector) {
                    VectorKernels.quantizeFp8FromBf16(src, srcOffset, dst, dstOffset, n);
                } else {
                    ScalarKernels.quantizeFp8FromBf16(src, srcOffset, dst, dstOffset, n);
                }
            }
            case DEQUANTIZE_FP8 -> {
                if (vector) {
                    VectorKernels.dequantizeFp8(src, srcOffset, dst, dstOffset, n);
                } else {
                    ScalarKernels.dequantizeFp8(src, srcOffset, dst, dstOffset, n);
                }
            }
            case REDUCE_SUM_FP32, REDUCE_MAX_FP32, REDUCE_MIN_FP32 -> {
                if (vector) {
                    VectorKernels.reduceFp32(op(), src, srcOffset, dst, dstOffset, n);
                } else {
                    ScalarKernels.reduceFp32(op(), src, srcOffset, dst, dstOffset, n);
                }
            }
            case REDUCE_SUM_BF16, REDUCE_MAX_BF16, REDUCE_MIN_BF16 -> {
                if (vector) {
                    VectorKernels.reduceBf16(op(), src, srcOffset, dst, dstOffset, n);
                } else {
                    ScalarKernels.reduceBf16(op(), src, srcOffset, dst, dstOffset, n);
                }
            }
            case REDUCE_SUM_FP16, REDUCE_MAX_FP16, REDUCE_MIN_FP16 -> {
                if (vector) {
                    VectorKernels.reduceFp16(op(), src, srcOffset, dst, dstOffset, n);
                } else {
                    ScalarKernels.reduceFp16(op(), src, srcOffset, dst, dstOffset, n);
                }
            }
        }
    }

    /** The reduction of a REDUCE_ kernel, from its name. */
    private ReduceOp op() {
        return ReduceOp.valueOf(name().split("_")[1]);
    }
}
