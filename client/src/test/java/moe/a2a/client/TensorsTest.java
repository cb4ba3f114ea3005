package moe.a2a.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.SplittableRandom;
import moe.a2a.v1.DType;
import moe.a2a.v1.Tensor;
import org.junit.jupiter.api.Test;

class TensorsTest {
    @Test
    void shouldRoundTripEveryDtype() {
        SplittableRandom rnd = new SplittableRandom(3);
        float[] values = new float[6 * 5];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) rnd.nextGaussian() * 100;
        }
        Tensor fp32 = Tensors.fp32(values, 6, 5);
        assertThat(fp32.getShapeList()).containsExactly(6L, 5L);
        assertThat(Tensors.floats(fp32)).containsExactly(values);

        short[] bf16 = new short[values.length];
        short[] fp16 = new short[values.length];
        for (int i = 0; i < values.length; i++) {
            bf16[i] = Tensors.toBf16(values[i]);
            fp16[i] = Float.floatToFloat16(values[i]);
        }
        float[] fromBf16 = Tensors.floats(Tensors.bf16(bf16, 6, 5));
        float[] fromFp16 = Tensors.floats(Tensors.fp16(fp16, 6, 5));
        for (int i = 0; i < values.length; i++) {
            assertThat(fromBf16[i]).isEqualTo(Tensors.fromBf16(bf16[i]));
            assertThat(Math.abs(fromBf16[i] - values[i]))
                    .isLessThanOrEqualTo(Math.abs(values[i]) / 256);
            assertThat(fromFp16[i]).isEqualTo(Float.float16ToFloat(fp16[i]));
        }
        assertThat(Tensors.fp16(fp16, 6, 5).getDtype()).isEqualTo(DType.FP16);
    }

    /** Round to nearest, ties to even, against the bit patterns worked out by hand. */
    @Test
    void shouldRoundToNearestBf16TiesToEven() {
        assertThat(Tensors.toBf16(1.0f)).isEqualTo((short) 0x3F80);
        assertThat(Tensors.toBf16(Float.intBitsToFloat(0x3F808000))).isEqualTo((short) 0x3F80);
        assertThat(Tensors.toBf16(Float.intBitsToFloat(0x3F818000))).isEqualTo((short) 0x3F82);
        assertThat(Tensors.toBf16(Float.intBitsToFloat(0x3F808001))).isEqualTo((short) 0x3F81);
        assertThat(Float.isNaN(Tensors.fromBf16(Tensors.toBf16(Float.NaN)))).isTrue();
    }

    @Test
    void shouldNameWhatDoesNotFit() {
        assertThatThrownBy(() -> Tensors.fp32(new float[5], 2, 3))
                .hasMessage("values: 5 (expected: rows 2 x cols 3)");
        assertThatThrownBy(() -> Tensors.topK(new int[4], new float[3], 2))
                .hasMessageStartingWith("topk: 4 ids, 3 weights, k 2");
    }
}
