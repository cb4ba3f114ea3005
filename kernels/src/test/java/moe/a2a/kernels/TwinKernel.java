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
                ScalarKernels.encode(DType.BF16, row, 0, src, offset, n);
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
            case DECODE_BF16, DECODE_FP16 -> {
                if (vector) {
                    if (dtype() == DType.BF16) {
                        VectorBf16.decode(src, srcOffset, dst, dstOffset, n);
                    } else {
                        VectorFp16.decode(src, srcOffset, dst, dstOffset, n);
                    }
                } else {
                    ScalarKernels.decode(dtype(), src, srcOffset, dst, dstOffset, n);
                }
            }
            case ACCUMULATE_BF16, ACCUMULATE_FP16 -> {
                if (vector) {
                    if (dtype() == DType.BF16) {
                        VectorBf16.accumulate(src, srcOffset, dst, dstOffset, n);
                    } else {
                        VectorFp16.accumulate(src, srcOffset, dst, dstOffset, n);
                    }
                } else {
                    ScalarKernels.accumulate(dtype(), src, srcOffset, dst, dstOffset, n);
                }
            }
            case ENCODE_BF16, ENCODE_FP16 -> {
                if (vector) {
                    if (dtype() == DType.BF16) {
                        VectorBf16.encode(src, srcOffset, dst, dstOffset, n);
                    } else {
                        VectorFp16.encode(src, srcOffset, dst, dstOffset, n);
                    }
                } else {
                    ScalarKernels.encode(dtype(), src, srcOffset, dst, dstOffset, n);
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
                    VectorFp8.quantize(src, srcOffset, dst, dstOffset, n);
                } else {
                    ScalarKernels.quantizeFp8(src, srcOffset, dst, dstOffset, n);
                }
            }
            case QUANTIZE_FP8_FROM_BF16 -> {
                if (vector) {
                    VectorFp8.quantizeFromBf16(src, srcOffset, dst, dstOffset, n);
                } else {
                    ScalarKernels.quantizeFp8FromBf16(src, srcOffset, dst, dstOffset, n);
                }
            }
            case DEQUANTIZE_FP8 -> {
                if (vector) {
                    VectorFp8.dequantize(src, srcOffset, dst, dstOffset, n);
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
            default -> {
                if (vector) {
                    if (dtype() == DType.BF16) {
                        VectorBf16.reduce(op(), src, srcOffset, dst, dstOffset, n);
                    } else {
                        VectorFp16.reduce(op(), src, srcOffset, dst, dstOffset, n);
                    }
                } else {
                    ScalarKernels.reduce(dtype(), op(), src, srcOffset, dst, dstOffset, n);
                }
            }
        }
    }

    /** The dtype of a kernel, from the last word of its name. */
    private DType dtype() {
        final String[] words = name().split("_");
        return DType.valueOf(words[words.length - 1]);
    }

    /** The reduction of a REDUCE_ kernel, from its name. */
    private ReduceOp op() {
        return ReduceOp.valueOf(name().split("_")[1]);
    }
}
