package moe.a2a.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.RowKernels;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * FP8 dispatch's kernels replayed in Java ({@link KernelReplays}) against the CPU path: the pack's
 * quantization must write the CPU quantizer's FP8 rows byte for byte, and the grouping's
 * dequantization the CPU path's values rounded to bf16, bit for bit, on rows full of the cases that
 * break rounding code (NaN, infinities, signed zeros, bf16 subnormals, values past 448 once scaled,
 * an all-zero block, a partial last block).
 */
class Fp8KernelsTest {
    @ParameterizedTest
    @ValueSource(ints = {128, 300, 7})
    void shouldMatchTheCpuQuantizerBitForBit(int hidden) {
        SplittableRandom random = new SplittableRandom(77 + hidden);
        int tokens = 40;
        int rowBytes = hidden * Short.BYTES;
        ByteBuffer src =
                ByteBuffer.allocateDirect(tokens * rowBytes).order(ByteOrder.LITTLE_ENDIAN);
        for (int t = 0; t < tokens; t++) {
            for (int c = 0; c < hidden; c++) {
                src.putShort(t * rowBytes + c * Short.BYTES, value(random, t, c));
            }
        }
        // the pack order: a permutation with a repeat, as rows bound for several ranks repeat
        int[] index = new int[tokens + 3];
        for (int r = 0; r < tokens; r++) {
            index[r] = (r * 17 + 5) % tokens;
        }
        index[tokens] = 3;
        index[tokens + 1] = 3;
        index[tokens + 2] = tokens - 1;
        int rows = index.length;

        ByteBuffer quantized = KernelReplays.quantizeFp8Rows(src, index, rows, hidden);
        int fp8Bytes = RowKernels.fp8RowBytes(hidden);
        ByteBuffer cpu = ByteBuffer.allocateDirect(rows * fp8Bytes).order(ByteOrder.LITTLE_ENDIAN);
        MemorySegment from = MemorySegment.ofBuffer(src);
        MemorySegment to = MemorySegment.ofBuffer(cpu);
        for (int r = 0; r < rows; r++) {
            RowKernels.quantizeFp8FromBf16(
                    from, (long) index[r] * rowBytes, to, (long) r * fp8Bytes, hidden);
        }
        for (int i = 0; i < rows * fp8Bytes; i++) {
            assertThat(quantized.get(i))
                    .as("byte %d (row %d, at %d)", i, i / fp8Bytes, i % fp8Bytes)
                    .isEqualTo(cpu.get(i));
        }

        int[] group = {rows - 1, 0, 5, 5, 2};
        ByteBuffer grouped =
                KernelReplays.dequantizeFp8Rows(quantized, group, group.length, hidden);
        ByteBuffer widened =
                ByteBuffer.allocateDirect(hidden * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        for (int r = 0; r < group.length; r++) {
            RowKernels.dequantizeFp8(
                    to, (long) group[r] * fp8Bytes, MemorySegment.ofBuffer(widened), 0, hidden);
            for (int c = 0; c < hidden; c++) {
                short expected = DType.floatToBf16(widened.getFloat(c * Float.BYTES));
                assertThat(grouped.getShort((r * hidden + c) * Short.BYTES))
                        .as("grouped row %d channel %d", r, c)
                        .isEqualTo(expected);
            }
        }
    }

    /** A bf16 value: mostly gaussian of varied scale, with every special case in some rows. */
    private static short value(SplittableRandom random, int t, int c) {
        if (t == 0) {
            return 0; // an all-zero row: the floor on amax
        }
        if (t == 1) {
            // specials in one row, so they share blocks with ordinary values
            return switch (c % 8) {
                case 0 -> DType.floatToBf16(Float.NaN);
                case 1 -> DType.floatToBf16(Float.POSITIVE_INFINITY);
                case 2 -> DType.floatToBf16(Float.NEGATIVE_INFINITY);
                case 3 -> (short) 0x8000; // -0
                case 4 -> (short) 0x0001; // the smallest bf16 subnormal
                case 5 -> (short) 0x8003;
                default -> DType.floatToBf16((float) random.nextGaussian());
            };
        }
        double scale = Math.pow(2, random.nextInt(-30, 30));
        return DType.floatToBf16((float) (random.nextGaussian() * scale));
    }
}
