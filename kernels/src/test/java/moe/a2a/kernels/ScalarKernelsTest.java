package moe.a2a.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.MemorySegment;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Holds {@link ScalarKernels} to references written independently of it: the bit formulas of {@code
 * moe.a2a.kernels.DType} for bf16 and fp16, and E4M3 from first principles.
 */
class ScalarKernelsTest {
    private static final long SEED = 0x7363616c6172L;

    @Test
    void shouldWidenBf16ExactlyWhenGivenEveryPattern() {
        for (int h = 0; h < 1 << 16; h++) {
            final float expected = Float.intBitsToFloat(h << 16);
            assertThat(Float.floatToRawIntBits(ScalarKernels.bf16ToFloat((short) h)))
                    .as("bf16 0x%04x", h)
                    .isEqualTo(Float.floatToRawIntBits(expected));
        }
    }

    @Test
    void shouldRoundToBf16LikeTheReferenceWhenGivenRandomAndSpecialFloats() {
        final Random random = new Random(SEED);
        for (int i = 0; i < 200_000; i++) {
            final float x =
                    i < KernelInputs.SPECIAL_FLOATS.length
                            ? Float.intBitsToFloat(KernelInputs.SPECIAL_FLOATS[i])
                            : KernelInputs.anyFloat(random);
            assertThat(ScalarKernels.floatToBf16(x))
                    .as("0x%08x, seed=%d", Float.floatToRawIntBits(x), SEED)
                    .isEqualTo(Reference.floatToBf16(x));
        }
    }

    /** Equal to DType's formula except for NaN, which DType keeps signaling and here is quiet. */
    @Test
    void shouldWidenFp16LikeTheReferenceWhenGivenEveryPattern() {
        for (int h = 0; h < 1 << 16; h++) {
            final int reference = Float.floatToRawIntBits(Reference.halfToFloat((short) h));
            final int expected = (h & 0x7fff) > 0x7c00 ? reference | 0x400000 : reference;
            assertThat(Float.floatToRawIntBits(ScalarKernels.fp16ToFloat((short) h)))
                    .as("half 0x%04x", h)
                    .isEqualTo(expected);
        }
    }

    /**
     * Equal to DType's formula except for NaN: DType gives {@code S.11111.1000000000}, dropping the
     * payload, where {@link Float#floatToFloat16} on x86 and this class keep its top 10 bits.
     */
    @Test
    void shouldRoundToFp16LikeTheReferenceWhenGivenRandomAndSpecialFloats() {
        final Random random = new Random(SEED);
        for (int i = 0; i < 200_000; i++) {
            final float x =
                    i < KernelInputs.SPECIAL_FLOATS.length
                            ? Float.intBitsToFloat(KernelInputs.SPECIAL_FLOATS[i])
                            : KernelInputs.anyFloat(random);
            final int bits = Float.floatToRawIntBits(x);
            final short expected =
                    Float.isNaN(x)
                            ? (short) (((bits >>> 16) & 0x8000) | 0x7e00 | ((bits >>> 13) & 0x3ff))
                            : Reference.floatToHalf(x);
            assertThat(ScalarKernels.floatToFp16(x))
                    .as("0x%08x, seed=%d", bits, SEED)
                    .isEqualTo(expected);
        }
    }

    @Test
    void shouldDecodeEveryE4m3CodeLikeFirstPrinciples() {
        for (int code = 0; code < 256; code++) {
            final int sign = code >>> 7;
            final int exponent = (code >>> 3) & 0xf;
            final int mantissa = code & 0x7;
            final float actual = ScalarKernels.e4m3ToFloat((byte) code);
            if (exponent == 0xf && mantissa == 0x7) {
                assertThat(actual).as("code 0x%02x", code).isNaN();
                continue;
            }
            final double magnitude =
                    exponent == 0
                            ? mantissa * Math.pow(2, -9)
                            : (1 + mantissa / 8.0) * Math.pow(2, exponent - 7);
            final float expected = (float) (sign == 1 ? -magnitude : magnitude);
            assertThat(Float.floatToRawIntBits(actual))
                    .as("code 0x%02x: %s", code, expected)
                    .isEqualTo(Float.floatToRawIntBits(expected));
        }
        assertThat(ScalarKernels.e4m3ToFloat((byte) 0x7e)).isEqualTo(448f);
        assertThat(ScalarKernels.e4m3ToFloat((byte) 0x01)).isEqualTo(0x1p-9f);
    }

    @Test
    void shouldGiveBackEveryE4m3CodeWhenRoundTripped() {
        for (int code = 0; code < 256; code++) {
            if ((code & 0x7f) != 0x7f) {
                assertThat(ScalarKernels.floatToE4m3(ScalarKernels.e4m3ToFloat((byte) code)))
                        .as("code 0x%02x", code)
                        .isEqualTo((byte) code);
            }
        }
    }

    @Test
    void shouldPickTheNearestE4m3CodeWithTiesToEvenWhenGivenRandomFloats() {
        final Random random = new Random(SEED);
        for (int i = 0; i < 100_000; i++) {
            final float x =
                    switch (i % 3) {
                        case 0 -> KernelInputs.e4m3Tie(random);
                        case 1 ->
                                (float)
                                        (random.nextGaussian()
                                                * Math.scalb(1.0, random.nextInt(20) - 11));
                        default -> (random.nextFloat() * 1000f - 500f);
                    };
            assertThat(ScalarKernels.floatToE4m3(x))
                    .as("%s (0x%08x), seed=%d", x, Float.floatToRawIntBits(x), SEED)
                    .isEqualTo(Reference.nearestE4m3(x));
        }
    }

    @Test
    void shouldSaturateAndKeepNanWhenConvertingSpecialsToE4m3() {
        assertThat(ScalarKernels.floatToE4m3(Float.POSITIVE_INFINITY)).isEqualTo((byte) 0x7e);
        assertThat(ScalarKernels.floatToE4m3(Float.NEGATIVE_INFINITY)).isEqualTo((byte) 0xfe);
        assertThat(ScalarKernels.floatToE4m3(1e30f)).isEqualTo((byte) 0x7e);
        assertThat(ScalarKernels.floatToE4m3(464f)).isEqualTo((byte) 0x7e);
        assertThat(ScalarKernels.floatToE4m3(Float.NaN)).isEqualTo((byte) 0x7f);
        assertThat(ScalarKernels.floatToE4m3(Float.intBitsToFloat(0xffc00001)))
                .isEqualTo((byte) 0xff);
        assertThat(ScalarKernels.floatToE4m3(-0f)).isEqualTo((byte) 0x80);
        assertThat(ScalarKernels.floatToE4m3(-0x1p-11f)).isEqualTo((byte) 0x80);
        assertThat(ScalarKernels.floatToE4m3(0x1p-10f)).isEqualTo((byte) 0x00);
        assertThat(ScalarKernels.floatToE4m3(0x1.8p-10f)).isEqualTo((byte) 0x01);
    }

    @Test
    void shouldWriteTheBlockScalesWhenQuantizing() {
        final Random random = new Random(SEED);
        final int hidden = 1000;
        final MemorySegment row = MemorySegment.ofArray(new float[hidden]);
        KernelInputs.fillRow(row, 0, hidden, random);
        final MemorySegment fp8 = MemorySegment.ofArray(new byte[RowKernels.fp8RowBytes(hidden)]);

        ScalarKernels.quantizeFp8(row, 0, fp8, 0, hidden);

        for (int block = 0; block < Fp8RowLayout.blocks(hidden); block++) {
            float amax = 1e-4f;
            for (int i = block * 128; i < Math.min(hidden, block * 128 + 128); i++) {
                final float abs = Math.abs(row.getAtIndex(ScalarKernels.FLOAT, i));
                if (Float.isFinite(abs)) {
                    amax = Math.max(amax, abs);
                }
            }
            assertThat(fp8.get(ScalarKernels.FLOAT, hidden + 4L * block))
                    .as("block %d, seed=%d", block, SEED)
                    .isEqualTo(amax / 448f);
        }
    }

    /**
     * Every finite element comes back within half an E4M3 step of its scaled value, times the
     * scale, plus the fp32 roundings of the scaling and the product (a few fp32 ulps).
     */
    @Test
    void shouldDequantizeWithinHalfAnE4m3StepWhenQuantized() {
        final Random random = new Random(SEED);
        for (int hidden : KernelInputs.SIZES) {
            final MemorySegment row = MemorySegment.ofArray(new float[hidden]);
            KernelInputs.fillRow(row, 0, hidden, random);
            final MemorySegment fp8 =
                    MemorySegment.ofArray(new byte[RowKernels.fp8RowBytes(hidden)]);
            final MemorySegment back = MemorySegment.ofArray(new float[hidden]);

            ScalarKernels.quantizeFp8(row, 0, fp8, 0, hidden);
            ScalarKernels.dequantizeFp8(fp8, 0, back, 0, hidden);

            for (int i = 0; i < hidden; i++) {
                final float x = row.getAtIndex(ScalarKernels.FLOAT, i);
                final float y = back.getAtIndex(ScalarKernels.FLOAT, i);
                final float scale = fp8.get(ScalarKernels.FLOAT, hidden + 4L * (i / 128));
                final String what =
                        String.valueOf(x) + " at " + i + " of " + hidden + ", seed=" + SEED;
                if (Float.isNaN(x)) {
                    assertThat(y).as(what).isNaN();
                } else if (Float.isInfinite(x)) {
                    assertThat(y).as(what).isEqualTo(Math.copySign(448f * scale, x));
                } else {
                    final double scaled = Math.abs((double) x) / scale;
                    final double step =
                            scaled < 0x1p-6
                                    ? 0x1p-9
                                    : Math.scalb(1.0, Math.getExponent(scaled) - 3);
                    final double bound =
                            step / 2 * scale + 4 * Math.ulp(Math.max(Math.abs(x), Math.abs(y)));
                    assertThat(Math.abs((double) y - x)).as(what).isLessThanOrEqualTo(bound);
                }
            }
        }
    }

    @Test
    void shouldSizeFp8RowsAsCodesThenOneScalePer128Channels() {
        assertThat(RowKernels.FP8_BLOCK).isEqualTo(128);
        assertThat(RowKernels.fp8RowBytes(0)).isZero();
        assertThat(RowKernels.fp8RowBytes(1)).isEqualTo(5);
        assertThat(RowKernels.fp8RowBytes(128)).isEqualTo(132);
        assertThat(RowKernels.fp8RowBytes(129)).isEqualTo(137);
        assertThat(RowKernels.fp8RowBytes(7168)).isEqualTo(7168 + 4 * 56);
    }

    @Test
    void shouldCopyTheIndexedRowsWhenGathering() {
        final byte[] src = new byte[5 * 16];
        for (int i = 0; i < src.length; i++) {
            src[i] = (byte) i;
        }
        final int[] rowIndex = {9, 3, 0, 4, 3};
        final byte[] dst = new byte[2 + 3 * 12];

        RowKernels.gatherRows(
                MemorySegment.ofArray(src),
                rowIndex,
                1,
                4,
                16,
                2,
                10,
                MemorySegment.ofArray(dst),
                2,
                12);

        final byte[] expected = new byte[dst.length];
        for (int row = 0; row < 3; row++) {
            System.arraycopy(src, rowIndex[1 + row] * 16 + 2, expected, 2 + row * 12, 10);
        }
        assertThat(dst).isEqualTo(expected);
    }

    /** Plain references, kept apart from the code under test. */
    private static final class Reference {
        private Reference() {}

        /** {@code moe.a2a.kernels.DType.floatToBf16}. */
        static short floatToBf16(float value) {
            final int bits = Float.floatToRawIntBits(value);
            if ((bits & 0x7fffffff) > 0x7f800000) {
                return (short) ((bits >>> 16) | 0x40);
            }
            final int roundingBias = 0x7fff + ((bits >>> 16) & 1);
            return (short) ((bits + roundingBias) >>> 16);
        }

        /** {@code moe.a2a.kernels.DType.halfToFloat}. */
        static float halfToFloat(short half) {
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

        /** {@code moe.a2a.kernels.DType.floatToHalf}. */
        static short floatToHalf(float value) {
            final int bits = Float.floatToRawIntBits(value);
            final int sign = (bits >>> 16) & 0x8000;
            final int abs = bits & 0x7fffffff;
            if (abs >= 0x7f800000) {
                return (short) (sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0));
            }
            if (abs >= 0x477ff000) {
                return (short) (sign | 0x7c00);
            }
            if (abs < 0x38800000) {
                if (abs < 0x33000000) {
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

        /**
         * By brute force over the 254 finite codes of {@code x}'s sign: the nearest in value, the
         * even code on a tie; beyond 448, 448.
         */
        static byte nearestE4m3(float x) {
            final int sign = x < 0 || Float.floatToRawIntBits(x) == 0x80000000 ? 0x80 : 0;
            final double target = Math.abs((double) x);
            int best = 0;
            double bestDistance = Double.POSITIVE_INFINITY;
            for (int code = 0; code < 0x7f; code++) {
                final double distance = Math.abs(firstPrinciples(code) - target);
                if (distance < bestDistance || (distance == bestDistance && (code & 1) == 0)) {
                    best = code;
                    bestDistance = distance;
                }
            }
            return (byte) (sign | best);
        }

        private static double firstPrinciples(int code) {
            final int exponent = code >>> 3;
            final int mantissa = code & 7;
            return exponent == 0
                    ? mantissa * 0x1p-9
                    : (1 + mantissa / 8.0) * Math.scalb(1.0, exponent - 7);
        }
    }
}
