package moe.a2a.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.SplittableRandom;
import moe.a2a.experts.Fp8Matrix;
import moe.a2a.kernels.DType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code fp8_weights} replayed in Java: a projection held in FP8 and made ready for its GEMM must
 * be, bit for bit, the weight the CPU path dequantizes ({@link Fp8Matrix#dequantized}) rounded to
 * bf16 as a GPU rank holding bf16 rounds it ({@link Bf16Weights}), in bf16 for the bf16 GEMMs and
 * widened for the fp32 ones; every E4M3 code, NaN included, over tiles that do not divide the
 * shape.
 */
class Fp8WeightsTest {
    @ParameterizedTest
    @CsvSource({"40, 24, 8, BF16", "40, 24, 8, FP32", "9, 130, 128, BF16", "256, 32, 128, FP32"})
    void shouldGiveTheCpuPathsWeightsBitForBit(int rows, int cols, int block, DType dtype) {
        SplittableRandom random = new SplittableRandom(rows * 31L + cols + block);
        ByteBuffer codes = ByteBuffer.allocateDirect(rows * cols).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < rows * cols; i++) {
            // every code early on, then random ones
            codes.put(i, (byte) (i < 256 ? i : random.nextInt(256)));
        }
        float[] scales = new float[Math.ceilDiv(rows, block) * Math.ceilDiv(cols, block)];
        for (int i = 0; i < scales.length; i++) {
            // over many binades, so products round, and some land subnormal in bf16
            scales[i] = (float) Math.scalb(random.nextDouble(1, 2), random.nextInt(-140, 20));
        }
        Fp8Matrix held = new Fp8Matrix(codes, scales, rows, cols, block);
        FloatBuffer cpu = held.dequantized();
        ByteBuffer device = KernelReplays.fp8Weights(codes, scales, rows, cols, block, dtype);
        for (int i = 0; i < rows * cols; i++) {
            if (dtype == DType.BF16) {
                short expected = DType.floatToBf16(cpu.get(i));
                assertThat(device.getShort(i * Short.BYTES))
                        .as("element %d (code 0x%02x)", i, codes.get(i) & 0xFF)
                        .isEqualTo(expected);
                assertThat(Float.floatToRawIntBits(DType.bf16ToFloat(expected)))
                        .as("as Bf16Weights rounds it")
                        .isEqualTo(Float.floatToRawIntBits(DType.BF16.round(cpu.get(i))));
            } else {
                // the bf16 copy's value, widened: fp32 GEMMs see what they see on a bf16 holding
                assertThat(Float.floatToRawIntBits(device.getFloat(i * Float.BYTES)))
                        .as("element %d (code 0x%02x)", i, codes.get(i) & 0xFF)
                        .isEqualTo(Float.floatToRawIntBits(DType.BF16.round(cpu.get(i))));
            }
        }
    }
}
