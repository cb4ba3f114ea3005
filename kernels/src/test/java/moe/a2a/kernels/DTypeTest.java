package moe.a2a.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class DTypeTest {

    @Test
    void shouldRoundTripEveryHalfWhenWidenedAndNarrowed() {
        for (int h = 0; h < 0x10000; h++) {
            float f = DType.halfToFloat((short) h);
            if (Float.isNaN(f)) {
                assertThat(Float.isNaN(DType.halfToFloat(DType.floatToHalf(f)))).isTrue();
            } else {
                assertThat(DType.floatToHalf(f) & 0xffff).as("half 0x%04x", h).isEqualTo(h);
            }
        }
    }

    @Test
    void shouldRoundToNearestHalfWhenFloatIsBetweenHalves() {
        long seed = 7;
        SplittableRandom random = new SplittableRandom(seed);
        for (int i = 0; i < 300; i++) {
            float f = (float) ((random.nextDouble() - 0.5) * Math.pow(2, random.nextInt(-26, 17)));
            float rounded = DType.halfToFloat(DType.floatToHalf(f));
            // brute force: the nearest of all finite halves, ties to the even one
            double best = Double.MAX_VALUE;
            float expected = Float.NaN;
            for (int h = 0; h < 0x10000; h += 1) {
                float cand = DType.halfToFloat((short) h);
                if (Float.isNaN(cand) || Float.isInfinite(cand)) {
                    continue;
                }
                double d = Math.abs((double) cand - f);
                if (d < best || (d == best && (h & 1) == 0)) {
                    best = d;
                    expected = cand;
                }
            }
            if (Math.abs(f) < 65504f) {
                assertThat(Math.abs((double) rounded - f))
                        .as("seed=%d f=%s", seed, f)
                        .isEqualTo(Math.abs((double) expected - f));
            }
        }
    }

    @Test
    void shouldRoundBf16ToNearestEvenWhenTie() {
        // 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: ties go to the even mantissa (1.0)
        assertThat(DType.BF16.round(1f + 0x1p-8f)).isEqualTo(1f);
        assertThat(DType.BF16.round(1f + 3 * 0x1p-8f)).isEqualTo(1f + 0x1p-6f);
        assertThat(DType.BF16.round(1f + 0x1p-8f + 0x1p-20f)).isEqualTo(1f + 0x1p-7f);
        assertThat(Float.isNaN(DType.BF16.round(Float.NaN))).isTrue();
        assertThat(DType.BF16.round(Float.POSITIVE_INFINITY)).isEqualTo(Float.POSITIVE_INFINITY);
    }

    @Test
    void shouldStayWithinHalfUlpWhenRoundingRandomFloats() {
        long seed = 11;
        SplittableRandom random = new SplittableRandom(seed);
        ByteBuffer buf = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < 100_000; i++) {
            float f = (float) (random.nextGaussian() * 10);
            DType.BF16.put(buf, 0, f);
            float bf = DType.BF16.get(buf, 0);
            assertThat(Math.abs(bf - f))
                    .as("seed=%d", seed)
                    .isLessThanOrEqualTo(Math.ulp(bf) * 0x1p16f / 2 + Math.abs(f) * 0x1p-9f);
            DType.FP16.put(buf, 0, f);
            float hf = DType.FP16.get(buf, 0);
            assertThat(Math.abs(hf - f)).isLessThanOrEqualTo(Math.abs(f) * 0x1p-11f + 0x1p-25f);
        }
    }
}
