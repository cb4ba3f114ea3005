package moe.a2a.kernels;

import java.lang.foreign.MemorySegment;

/** Runs every {@link RowKernels} kernel once, then prints which implementation ran. */
final class RowKernelsProbe {
    private RowKernelsProbe() {}

    public static void main(String[] args) {
        final int n = 256;
        final MemorySegment floats = MemorySegment.ofArray(new float[n]);
        final MemorySegment halves = MemorySegment.ofArray(new short[n]);
        final MemorySegment fp8 = MemorySegment.ofArray(new byte[RowKernels.fp8RowBytes(n)]);
        RowKernels.decode(DType.BF16, halves, 0, floats, 0, n);
        RowKernels.accumulate(DType.BF16, halves, 0, floats, 0, n);
        RowKernels.encode(DType.BF16, floats, 0, halves, 0, n);
        RowKernels.decode(DType.FP16, halves, 0, floats, 0, n);
        RowKernels.accumulate(DType.FP16, halves, 0, floats, 0, n);
        RowKernels.encode(DType.FP16, floats, 0, halves, 0, n);
        RowKernels.axpy(0.5f, floats, 0, floats, 0, n);
        RowKernels.quantizeFp8(floats, 0, fp8, 0, n);
        RowKernels.quantizeFp8FromBf16(halves, 0, fp8, 0, n);
        RowKernels.dequantizeFp8(fp8, 0, floats, 0, n);
        RowKernels.gatherRows(floats, new int[] {1, 0}, 0, 2, 8, 0, 8, halves, 0, 8);
        System.out.println("implementation: " + RowKernels.implementation());
    }
}
