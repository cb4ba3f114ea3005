package moe.a2a.kernels;

import static moe.a2a.kernels.VectorKernels.FLOATS;
import static moe.a2a.kernels.VectorKernels.INTS;
import static moe.a2a.kernels.VectorKernels.LANES;
import static moe.a2a.kernels.VectorKernels.LE;
import static moe.a2a.kernels.VectorKernels.SHORTS;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;

/**
 * The IEEE half kernels of {@link RowKernels}. The Vector API has no half-precision lane
 * conversion, so both directions are integer and fp32 arithmetic on the bits, exhaustively equal to
 * {@link ScalarKernels#fp16ToFloat} and {@link ScalarKernels#floatToFp16}. Stateless.
 */
// The loops mirror VectorBf16's on purpose. One loop per kernel, picking the lane conversion by
// dtype, measured 2.6x (decode), 5.9x (bf16 encode) and 4.6x (fp16 encode) slower per row in
// KernelsBenchmark once both dtypes had run: C2 compiles the shared loop once for both paths and
// boxes the vectors where they merge, instead of keeping them in registers.
final class VectorFp16 {
    private VectorFp16() {}

    static void decode(
            MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int n) {
        final int bound = FLOATS.loopBound(n);
        int i = 0;
        for (; i < bound; i += LANES) {
            widen(src, srcOffset + 2L * i).intoMemorySegment(dst, dstOffset + 4L * i, LE);
        }
        ScalarKernels.decode(DType.FP16, src, srcOffset + 2L * i, dst, dstOffset + 4L * i, n - i);
    }

    static void accumulate(
            MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int n) {
        final int bound = FLOATS.loopBound(n);
        int i = 0;
        for (; i < bound; i += LANES) {
            final long at = dstOffset + 4L * i;
            final FloatVector sum = FloatVector.fromMemorySegment(FLOATS, dst, at, LE);
            VectorKernels.nanFirst(sum, sum.add(widen(src, srcOffset + 2L * i)))
                    .intoMemorySegment(dst, at, LE);
        }
        ScalarKernels.accumulate(
                DType.FP16, src, srcOffset + 2L * i, dst, dstOffset + 4L * i, n - i);
    }

    static void reduce(
            ReduceOp op,
            MemorySegment src,
            long srcOffset,
            MemorySegment dst,
            long dstOffset,
            int n) {
        final int bound = FLOATS.loopBound(n);
        int i = 0;
        for (; i < bound; i += LANES) {
            final long at = dstOffset + 2L * i;
            final FloatVector r =
                    VectorKernels.reduce(op, widen(dst, at), widen(src, srcOffset + 2L * i));
            narrow(r.reinterpretAsInts()).intoMemorySegment(dst, at, LE);
        }
        ScalarKernels.reduce(
                DType.FP16, op, src, srcOffset + 2L * i, dst, dstOffset + 2L * i, n - i);
    }

    static void encode(
            MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int n) {
        final int bound = FLOATS.loopBound(n);
        int i = 0;
        for (; i < bound; i += LANES) {
            final IntVector bits = IntVector.fromMemorySegment(INTS, src, srcOffset + 4L * i, LE);
            narrow(bits).intoMemorySegment(dst, dstOffset + 2L * i, LE);
        }
        ScalarKernels.encode(DType.FP16, src, srcOffset + 4L * i, dst, dstOffset + 2L * i, n - i);
    }

    /** {@link #LANES} halves at {@code offset}, widened to fp32. */
    static FloatVector widen(MemorySegment src, long offset) {
        final IntVector halves =
                (IntVector)
                        ShortVector.fromMemorySegment(SHORTS, src, offset, LE)
                                .convertShape(VectorOperators.S2I, INTS, 0);
        final IntVector abs = halves.and(0x7fff);
        final IntVector shifted = abs.lanewise(VectorOperators.LSHL, 13);
        // exponent and mantissa moved into fp32's place; 2^112 rebiases normals and subnormals
        final IntVector finite = shifted.reinterpretAsFloats().mul(0x1p112f).reinterpretAsInts();
        final VectorMask<Integer> nan = abs.compare(VectorOperators.GT, 0x7c00);
        final IntVector special =
                shifted.or(0x7f800000).lanewise(VectorOperators.OR, 0x400000, nan);
        return finite.blend(special, abs.compare(VectorOperators.GE, 0x7c00))
                .or(halves.and(0x80000000)) // the sign, which S2I extended to bit 31
                .reinterpretAsFloats();
    }

    /**
     * {@link ScalarKernels#floatToFp16} of each lane, given as raw fp32 bits: the two scalings put
     * the value's rounding point at fp32's last mantissa bit, so that one fp32 addition rounds to
     * nearest even, subnormals and overflow included.
     */
    static ShortVector narrow(IntVector bits) {
        final IntVector abs = bits.and(0x7fffffff);
        final FloatVector scaled = abs.reinterpretAsFloats().mul(0x1p112f).mul(0x1p-110f);
        final IntVector exponent = abs.lanewise(VectorOperators.LSHR, 23).max(113);
        final IntVector rounded =
                exponent.add(15)
                        .lanewise(VectorOperators.LSHL, 23)
                        .reinterpretAsFloats()
                        .add(scaled)
                        .reinterpretAsInts();
        final IntVector finite =
                rounded.lanewise(VectorOperators.LSHR, 13).and(0x7c00).add(rounded.and(0x0fff));
        final IntVector quietNan = abs.lanewise(VectorOperators.LSHR, 13).and(0x3ff).or(0x7e00);
        final IntVector halves =
                finite.blend(quietNan, abs.compare(VectorOperators.GT, 0x7f800000))
                        .or(bits.lanewise(VectorOperators.LSHR, 16).and(0x8000));
        return (ShortVector) halves.convertShape(VectorOperators.I2S, SHORTS, 0);
    }
}
