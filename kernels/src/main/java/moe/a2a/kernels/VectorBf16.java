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
import jdk.incubator.vector.VectorOperators;

/** The bf16 kernels of {@link RowKernels}, on the Vector API. Stateless. */
final class VectorBf16 {
    private VectorBf16() {}

    static void decode(
            MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int n) {
        final int bound = FLOATS.loopBound(n);
        int i = 0;
        for (; i < bound; i += LANES) {
            widen(src, srcOffset + 2L * i).intoMemorySegment(dst, dstOffset + 4L * i, LE);
        }
        ScalarKernels.decode(DType.BF16, src, srcOffset + 2L * i, dst, dstOffset + 4L * i, n - i);
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
                DType.BF16, src, srcOffset + 2L * i, dst, dstOffset + 4L * i, n - i);
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
                DType.BF16, op, src, srcOffset + 2L * i, dst, dstOffset + 2L * i, n - i);
    }

    static void encode(
            MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int n) {
        final int bound = FLOATS.loopBound(n);
        int i = 0;
        for (; i < bound; i += LANES) {
            final IntVector bits = IntVector.fromMemorySegment(INTS, src, srcOffset + 4L * i, LE);
            narrow(bits).intoMemorySegment(dst, dstOffset + 2L * i, LE);
        }
        ScalarKernels.encode(DType.BF16, src, srcOffset + 4L * i, dst, dstOffset + 2L * i, n - i);
    }

    /** {@link #LANES} bf16 values at {@code offset}, widened to fp32. */
    static FloatVector widen(MemorySegment src, long offset) {
        final ShortVector halves = ShortVector.fromMemorySegment(SHORTS, src, offset, LE);
        return ((IntVector) halves.convertShape(VectorOperators.S2I, INTS, 0))
                .lanewise(VectorOperators.LSHL, 16)
                .reinterpretAsFloats();
    }

    /** {@link ScalarKernels#floatToBf16} of each lane, given as raw fp32 bits. */
    static ShortVector narrow(IntVector bits) {
        final IntVector high = bits.lanewise(VectorOperators.LSHR, 16);
        final IntVector rounded =
                bits.add(high.and(1).add(0x7fff)).lanewise(VectorOperators.LSHR, 16);
        final IntVector quietNan = high.or(0x40);
        final IntVector halves =
                rounded.blend(
                        quietNan, bits.and(0x7fffffff).compare(VectorOperators.GT, 0x7f800000));
        return (ShortVector) halves.convertShape(VectorOperators.I2S, SHORTS, 0);
    }
}
