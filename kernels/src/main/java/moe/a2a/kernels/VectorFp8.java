package moe.a2a.kernels;

import static moe.a2a.kernels.VectorKernels.BYTES;
import static moe.a2a.kernels.VectorKernels.FLOATS;
import static moe.a2a.kernels.VectorKernels.INTS;
import static moe.a2a.kernels.VectorKernels.LANES;
import static moe.a2a.kernels.VectorKernels.LE;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The FP8 kernels of {@link VectorKernels}. Scales and multipliers come from the same {@link
 * ScalarKernels} expressions as the scalar twins'; each block ends with the scalar twin on the
 * remainder (only the last block of a row can have one). Stateless.
 */
final class VectorFp8 {
    /** bf16 at full vector width, for the bf16 amax. */
    private static final VectorSpecies<Short> WIDE_SHORTS =
            VectorSpecies.of(short.class, FLOATS.vectorShape());

    private static final int E4M3_MAX_BITS = Float.floatToRawIntBits(ScalarKernels.E4M3_MAX);

    private VectorFp8() {}

    static void quantize(
            MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int hidden) {
        for (int block = 0; block < Fp8RowLayout.blocks(hidden); block++) {
            final int start = block * Fp8RowLayout.BLOCK;
            final int len = Math.min(Fp8RowLayout.BLOCK, hidden - start);
            final long from = srcOffset + 4L * start;
            final float amax = Math.max(amaxF32(src, from, len), ScalarKernels.AMAX_FLOOR);
            final float multiplier = ScalarKernels.multiplier(amax);
            final long to = dstOffset + start;
            final int bound = FLOATS.loopBound(len);
            int i = 0;
            for (; i < bound; i += LANES) {
                final FloatVector x = FloatVector.fromMemorySegment(FLOATS, src, from + 4L * i, LE);
                toE4m3(x.mul(multiplier)).intoMemorySegment(dst, to + i, LE);
            }
            ScalarKernels.encodeE4m3(src, from + 4L * i, dst, to + i, len - i, multiplier);
            final long scaleAt = dstOffset + Fp8RowLayout.scaleOffset(hidden, block);
            dst.set(ScalarKernels.FLOAT, scaleAt, ScalarKernels.scale(amax));
        }
    }

    static void quantizeFromBf16(
            MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int hidden) {
        for (int block = 0; block < Fp8RowLayout.blocks(hidden); block++) {
            final int start = block * Fp8RowLayout.BLOCK;
            final int len = Math.min(Fp8RowLayout.BLOCK, hidden - start);
            final long from = srcOffset + 2L * start;
            final float amax = Math.max(amaxBf16(src, from, len), ScalarKernels.AMAX_FLOOR);
            final float multiplier = ScalarKernels.multiplier(amax);
            final long to = dstOffset + start;
            final int bound = FLOATS.loopBound(len);
            int i = 0;
            for (; i < bound; i += LANES) {
                final FloatVector x = VectorBf16.widen(src, from + 2L * i);
                toE4m3(x.mul(multiplier)).intoMemorySegment(dst, to + i, LE);
            }
            ScalarKernels.encodeE4m3FromBf16(src, from + 2L * i, dst, to + i, len - i, multiplier);
            final long scaleAt = dstOffset + Fp8RowLayout.scaleOffset(hidden, block);
            dst.set(ScalarKernels.FLOAT, scaleAt, ScalarKernels.scale(amax));
        }
    }

    static void dequantize(
            MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int hidden) {
        for (int block = 0; block < Fp8RowLayout.blocks(hidden); block++) {
            final int start = block * Fp8RowLayout.BLOCK;
            final int len = Math.min(Fp8RowLayout.BLOCK, hidden - start);
            final long scaleAt = srcOffset + Fp8RowLayout.scaleOffset(hidden, block);
            final float scale = src.get(ScalarKernels.FLOAT, scaleAt);
            final long from = srcOffset + start;
            final long to = dstOffset + 4L * start;
            final int bound = FLOATS.loopBound(len);
            int i = 0;
            for (; i < bound; i += LANES) {
                final ByteVector q = ByteVector.fromMemorySegment(BYTES, src, from + i, LE);
                fromE4m3((IntVector) q.convertShape(VectorOperators.B2I, INTS, 0), scale)
                        .intoMemorySegment(dst, to + 4L * i, LE);
            }
            ScalarKernels.dequantizeE4m3(src, from + i, dst, to + 4L * i, len - i, scale);
        }
    }

    /**
     * {@link ScalarKernels#amaxF32}, compared as integers: finite magnitudes order as their bits.
     */
    private static float amaxF32(MemorySegment src, long srcOffset, int len) {
        final int bound = INTS.loopBound(len);
        IntVector max = IntVector.zero(INTS);
        int i = 0;
        for (; i < bound; i += INTS.length()) {
            final IntVector abs =
                    IntVector.fromMemorySegment(INTS, src, srcOffset + 4L * i, LE).and(0x7fffffff);
            max =
                    max.lanewise(
                            VectorOperators.MAX, abs, abs.compare(VectorOperators.LT, 0x7f800000));
        }
        final float head = Float.intBitsToFloat(max.reduceLanes(VectorOperators.MAX));
        return Math.max(head, ScalarKernels.amaxF32(src, srcOffset + 4L * i, len - i));
    }

    /** {@link ScalarKernels#amaxBf16}, compared as integers on the bf16 bits. */
    private static float amaxBf16(MemorySegment src, long srcOffset, int len) {
        final int bound = WIDE_SHORTS.loopBound(len);
        ShortVector max = ShortVector.zero(WIDE_SHORTS);
        int i = 0;
        for (; i < bound; i += WIDE_SHORTS.length()) {
            final ShortVector abs =
                    ShortVector.fromMemorySegment(WIDE_SHORTS, src, srcOffset + 2L * i, LE)
                            .and((short) 0x7fff);
            max =
                    max.lanewise(
                            VectorOperators.MAX,
                            abs,
                            abs.compare(VectorOperators.LT, (short) 0x7f80));
        }
        final float head = ScalarKernels.bf16ToFloat(max.reduceLanes(VectorOperators.MAX));
        return Math.max(head, ScalarKernels.amaxBf16(src, srcOffset + 2L * i, len - i));
    }

    /**
     * {@link ScalarKernels#floatToE4m3} of each lane. Adding {@code 2^(e + 20)}, where {@code e} is
     * the lane's exponent (at least -6, the subnormal spacing's), leaves 3 mantissa bits at the
     * bottom of fp32's, so one fp32 addition rounds to nearest even; what it adds to the exponent
     * is taken off again as integers.
     */
    private static ByteVector toE4m3(FloatVector y) {
        final IntVector bits = y.reinterpretAsInts();
        final IntVector abs = bits.and(0x7fffffff);
        // saturates: infinities and NaN too, and NaN gets its own code below
        final IntVector clamped = abs.min(E4M3_MAX_BITS);
        final IntVector exponent = clamped.lanewise(VectorOperators.LSHR, 23).max(127 - 6);
        final IntVector magic = exponent.add(20).lanewise(VectorOperators.LSHL, 23);
        final IntVector sum =
                magic.reinterpretAsFloats().add(clamped.reinterpretAsFloats()).reinterpretAsInts();
        final IntVector codes =
                sum.sub(magic)
                        .add(exponent.sub(127 - 6).lanewise(VectorOperators.LSHL, 3))
                        .blend(0x7f, abs.compare(VectorOperators.GT, 0x7f800000))
                        .or(bits.lanewise(VectorOperators.LSHR, 24).and(0x80));
        return (ByteVector) codes.convertShape(VectorOperators.I2B, BYTES, 0);
    }

    /** {@link ScalarKernels#e4m3ToFloat} of each lane times {@code scale}, as raw fp32 bits. */
    private static IntVector fromE4m3(IntVector codes, float scale) {
        final IntVector magnitude = codes.and(0x7f);
        final IntVector sign = codes.and(0x80000000); // B2I extended the sign to bit 31
        final IntVector value =
                magnitude
                        .lanewise(VectorOperators.LSHL, 20)
                        .reinterpretAsFloats()
                        .mul(0x1p120f)
                        .reinterpretAsInts()
                        .or(sign);
        return value.reinterpretAsFloats()
                .mul(scale)
                .reinterpretAsInts()
                .blend(sign.or(0x7fc00000), magnitude.compare(VectorOperators.EQ, 0x7f));
    }
}
