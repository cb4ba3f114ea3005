package moe.a2a.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.RowKernels;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * FP8 dispatch's kernels replayed in Java ({@link KernelReplays}) against the CPU path: the pack's
 * quantization must write the CPU quantizer's FP8 rows byte for byte, and the grouping's
 * dequantization the CPU path's values rounded to bf16, bit for bit, on rows full of the cases that
 * break rounding code (NaN of either sign, infinities, signed zeros, bf16 subnormals, values past
 * 448 once scaled, an all-zero block, a partial last block), from bf16, fp16 and fp32 tokens.
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

    /**
     * fp16 and fp32 tokens, as the CPU path quantizes them ({@code Fp8Quantizer}: fp32 rows as they
     * are, fp16 rows widened first) and dequantizes them for its fp32 experts, which the GPU rank's
     * fp32 GEMMs take too: byte for byte, then bit for bit.
     */
    @ParameterizedTest
    @CsvSource({"300, FP16", "7, FP16", "300, FP32", "128, FP32"})
    void shouldMatchTheCpuPathForFp16AndFp32Tokens(int hidden, DType dtype) {
        SplittableRandom random = new SplittableRandom(91 + hidden);
        int tokens = 12;
        float[] values = new float[tokens * hidden];
        for (int i = 0; i < values.length; i++) {
            values[i] = DType.bf16ToFloat(value(random, i / hidden, i % hidden));
            if (i % 11 == 0) {
                // below bf16's precision, and fp32 subnormals
                values[i] = (float) random.nextGaussian() * (i % 2 == 0 ? 1 : 1e-40f);
            }
        }
        int rowBytes = hidden * dtype.sizeBytes();
        ByteBuffer src =
                ByteBuffer.allocateDirect(tokens * rowBytes).order(ByteOrder.LITTLE_ENDIAN);
        dtype.encode(values, 0, values.length, src, 0);
        int[] index = {3, 0, 11, 3, 7};

        ByteBuffer quantized =
                KernelReplays.quantizeFp8Rows(src, index, index.length, hidden, dtype);
        int fp8Bytes = RowKernels.fp8RowBytes(hidden);
        ByteBuffer row =
                ByteBuffer.allocateDirect(hidden * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer cpu =
                ByteBuffer.allocateDirect(index.length * fp8Bytes).order(ByteOrder.LITTLE_ENDIAN);
        for (int r = 0; r < index.length; r++) {
            float[] widened = new float[hidden];
            dtype.decode(src, index[r] * rowBytes, widened, 0, hidden);
            row.asFloatBuffer().put(0, widened);
            RowKernels.quantizeFp8(
                    MemorySegment.ofBuffer(row),
                    0,
                    MemorySegment.ofBuffer(cpu),
                    (long) r * fp8Bytes,
                    hidden);
        }
        assertThat(quantized.slice(0, index.length * fp8Bytes)).isEqualTo(cpu);

        int[] group = {4, 1, 1, 0};
        ByteBuffer grouped =
                KernelReplays.dequantizeFp8Rows(quantized, group, group.length, hidden, DType.FP32);
        for (int r = 0; r < group.length; r++) {
            RowKernels.dequantizeFp8(
                    MemorySegment.ofBuffer(cpu),
                    (long) group[r] * fp8Bytes,
                    MemorySegment.ofBuffer(row),
                    0,
                    hidden);
            for (int c = 0; c < hidden; c++) {
                assertThat(Float.floatToRawIntBits(grouped.getFloat((r * hidden + c) * 4)))
                        .as("grouped row %d channel %d", r, c)
                        .isEqualTo(Float.floatToRawIntBits(row.getFloat(c * Float.BYTES)));
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
                case 6 -> (short) 0xffc1; // a negative NaN: its code keeps the sign
                default -> DType.floatToBf16((float) random.nextGaussian());
            };
        }
        double scale = Math.pow(2, random.nextInt(-30, 30));
        return DType.floatToBf16((float) (random.nextGaussian() * scale));
    }
}
