package moe.a2a.kernels;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * The row kernels on the Vector API, bit-for-bit equal to their {@link ScalarKernels} twins for
 * every input; each loop ends with the scalar twin on the remainder. This class holds the species
 * and the fp32 kernels; the 16-bit ones live in {@link VectorBf16} and {@link VectorFp16}, the FP8
 * ones in {@link VectorFp8}. Only {@link RowKernels} calls them, and only when the boot layer has
 * {@code jdk.incubator.vector} and {@link #supported} holds. Stateless.
 */
final class VectorKernels {
    /**
     * The host's preferred shape: 512 bits on this project's AVX-512 hosts, where it measured as
     * fast as 256 bits or faster (AMD Zen 4 splits it in two halves, but runs half the
     * instructions); 256 on AVX2 hosts. Below 256 bits {@link #supported} is false, as the E4M3
     * side of a conversion would need a 32-bit vector.
     */
    static final VectorSpecies<Float> FLOATS = FloatVector.SPECIES_PREFERRED;

    static final int LANES = FLOATS.length();
    static final VectorSpecies<Integer> INTS = VectorSpecies.of(int.class, FLOATS.vectorShape());

    /** Shorts as many as {@link #LANES}: the bf16 and fp16 sides of a conversion. */
    static final VectorSpecies<Short> SHORTS = narrower(short.class, 2);

    /** Bytes as many as {@link #LANES}: the E4M3 side of a conversion. */
    static final VectorSpecies<Byte> BYTES = narrower(byte.class, 4);

    static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    private VectorKernels() {}

    /** Whether this host's vectors are wide enough for these kernels: 256 bits or more. */
    static boolean supported() {
        return FLOATS.vectorBitSize() >= 256;
    }

    static String description() {
        return "Vector API, " + FLOATS.vectorBitSize() + "-bit";
    }

    /** {@link #LANES} lanes of {@code type}, {@code ratio} times narrower than fp32. */
    private static <E> VectorSpecies<E> narrower(Class<E> type, int ratio) {
        // a shape below 64 bits does not exist: such species are never used (see supported())
        final int bits = Math.max(64, FLOATS.vectorBitSize() / ratio);
        return VectorSpecies.of(type, VectorShape.forBitSize(bits));
    }

    static void axpy(float w, MemorySegment x, long xOffset, MemorySegment y, long yOffset, int n) {
        if (Float.isNaN(w)) {
            ScalarKernels.axpy(w, x, xOffset, y, yOffset, n); // no arithmetic left to vectorize
            return;
        }
        final int bound = FLOATS.loopBound(n);
        int i = 0;
        for (; i < bound; i += LANES) {
            final long at = yOffset + 4L * i;
            final FloatVector xs = FloatVector.fromMemorySegment(FLOATS, x, xOffset + 4L * i, LE);
            final FloatVector ys = FloatVector.fromMemorySegment(FLOATS, y, at, LE);
            // mul then add, never fma: the scalar twin rounds twice
            nanFirst(ys, ys.add(xs.mul(w))).intoMemorySegment(y, at, LE);
        }
        ScalarKernels.axpy(w, x, xOffset + 4L * i, y, yOffset + 4L * i, n - i);
    }

    static void reduceFp32(
            ReduceOp op,
            MemorySegment src,
            long srcOffset,
            MemorySegment dst,
            long dstOffset,
            int n) {
        final int bound = FLOATS.loopBound(n);
        int i = 0;
        for (; i < bound; i += LANES) {
            final long at = dstOffset + 4L * i;
            final FloatVector a = FloatVector.fromMemorySegment(FLOATS, dst, at, LE);
            final FloatVector b =
                    FloatVector.fromMemorySegment(FLOATS, src, srcOffset + 4L * i, LE);
            reduce(op, a, b).intoMemorySegment(dst, at, LE);
        }
        ScalarKernels.reduceFp32(op, src, srcOffset + 4L * i, dst, dstOffset + 4L * i, n - i);
    }

    /** {@link ScalarKernels#reduce} of each lane. */
    static FloatVector reduce(ReduceOp op, FloatVector a, FloatVector b) {
        final FloatVector result =
                switch (op) {
                    case SUM -> a.add(b);
                    case MAX -> a.lanewise(VectorOperators.MAX, b);
                    case MIN -> a.lanewise(VectorOperators.MIN, b);
                };
        return nanFirst(a, nanFirst(b, result));
    }

    /** {@link ScalarKernels#nanFirst} of each lane. */
    static FloatVector nanFirst(FloatVector first, FloatVector result) {
        return result.blend(
                first.reinterpretAsInts().or(0x400000).reinterpretAsFloats(),
                first.test(VectorOperators.IS_NAN));
    }
}
