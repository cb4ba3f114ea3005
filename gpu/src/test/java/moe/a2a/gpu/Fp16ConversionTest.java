package moe.a2a.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import moe.a2a.kernels.DType;
import org.junit.jupiter.api.Test;

/**
 * kernels.cu's fp16 conversions, replayed statement by statement ({@link
 * KernelReplays#floatToFp16}, {@link KernelReplays#fp16ToFloat}), against the CPU path's {@link
 * DType#floatToHalf} and {@link DType#halfToFloat}: every fp16 value, every midpoint between two
 * neighbours (the ties) and the floats next to them, the overflow and subnormal edges, NaNs with
 * payloads, and random floats of every exponent.
 */
class Fp16ConversionTest {
    @Test
    void shouldWidenEveryFp16ValueAsTheCpuPathDoes() {
        for (int h = 0; h < 1 << 16; h++) {
            assertThat(Float.floatToRawIntBits(KernelReplays.fp16ToFloat((short) h)))
                    .as("fp16 0x%04x", h)
                    .isEqualTo(Float.floatToRawIntBits(DType.halfToFloat((short) h)));
        }
    }

    @Test
    void shouldRoundEveryValueTieAndNeighbourAsTheCpuPathDoes() {
        for (int h = 0; h < 0x7c00; h++) {
            float value = DType.halfToFloat((short) h);
            float next = DType.halfToFloat((short) (h + 1));
            float tie = (float) (((double) value + next) / 2);
            for (float f : new float[] {value, tie, Math.nextDown(tie), Math.nextUp(tie)}) {
                assertSameHalf(f);
                assertSameHalf(-f);
            }
        }
    }

    @Test
    void shouldRoundEdgesNaNsAndRandomFloatsAsTheCpuPathDoes() {
        float[] edges = {
            65504f,
            65519.996f,
            65520f,
            65536f,
            Float.MAX_VALUE,
            Float.POSITIVE_INFINITY,
            0x1p-14f,
            Math.nextDown(0x1p-14f),
            0x1p-24f,
            0x1p-25f,
            Math.nextUp(0x1p-25f),
            0x1.8p-24f,
            Float.MIN_VALUE,
            0f
        };
        for (float f : edges) {
            assertSameHalf(f);
            assertSameHalf(-f);
        }
        for (int bits : new int[] {0x7fc00000, 0x7f800001, 0x7fa00000, 0xffc01234, 0x7f802000}) {
            assertSameHalf(Float.intBitsToFloat(bits));
        }
        SplittableRandom random = new SplittableRandom(16);
        for (int i = 0; i < 1 << 20; i++) {
            assertSameHalf(Float.intBitsToFloat(random.nextInt()));
        }
    }

    private static void assertSameHalf(float f) {
        assertThat(KernelReplays.floatToFp16(f))
                .as("float 0x%08x", Float.floatToRawIntBits(f))
                .isEqualTo(DType.floatToHalf(f));
    }
}
