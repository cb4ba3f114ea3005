package moe.a2a.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Locale;
import java.util.Random;
import moe.a2a.kernels.KernelInputs.Memory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Holds every {@link VectorKernels} kernel bit-for-bit equal to its {@link ScalarKernels} twin:
 * random and special inputs, every size in {@link KernelInputs#SIZES}, unaligned offsets, heap and
 * off-heap segments of exactly the needed size. Outputs are compared as raw bytes, the bytes around
 * the written range included.
 */
class VectorKernelsTest {
    private static final long SEED = 0x6b65726e656c73L;

    @Test
    void shouldRunTheVectorKernelsWhenTheTestJvmHasTheVectorModule() {
        assertThat(ModuleLayer.boot().findModule("jdk.incubator.vector")).isPresent();
        assertThat(RowKernels.vectorized()).isTrue();
        assertThat(VectorKernels.LANES).isGreaterThan(1);
    }

    @ParameterizedTest
    @EnumSource(TwinKernel.class)
    void shouldMatchTheScalarTwinBitForBitWhenGivenRandomAndSpecialInputs(TwinKernel kernel) {
        try (Arena arena = Arena.ofConfined()) {
            int trial = 0;
            for (int n : KernelInputs.SIZES) {
                // four offset pairs per size, so each size meets every kind of memory
                for (long[] offsets : KernelInputs.OFFSETS) {
                    final Memory memory = Memory.values()[trial % Memory.values().length];
                    final long seed = SEED + 1000L * kernel.ordinal() + trial++;
                    compareTwins(kernel, arena, memory, n, offsets[0], offsets[1], seed);
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(
            value = TwinKernel.class,
            names = {"DECODE_BF16", "ACCUMULATE_BF16", "DECODE_FP16", "ACCUMULATE_FP16"})
    void shouldMatchTheScalarTwinWhenWideningEveryHalfPattern(TwinKernel kernel) {
        final int n = 1 << 16;
        final MemorySegment src = MemorySegment.ofArray(new short[n]);
        for (int h = 0; h < n; h++) {
            src.set(ScalarKernels.SHORT, 2L * h, (short) h);
        }
        final MemorySegment scalarDst = MemorySegment.ofArray(new float[n]);
        KernelInputs.fillFloats(scalarDst, 0, n, new Random(SEED));
        final MemorySegment vectorDst = MemorySegment.ofArray(new float[n]).copyFrom(scalarDst);

        kernel.run(false, 0f, src, 0, scalarDst, 0, n);
        kernel.run(true, 0f, src, 0, vectorDst, 0, n);

        assertSameBytes(kernel + " over every pattern, seed=" + SEED, scalarDst, vectorDst);
    }

    /**
     * Every fp32 sign, exponent and top mantissa bits, with the bits below the rounding point zero,
     * just under, at and just over the tie: every rounding case of bf16 (7 mantissa bits) and fp16
     * (10; exponents far out of its range left out), NaN payloads and overflow included.
     */
    @ParameterizedTest
    @EnumSource(
            value = TwinKernel.class,
            names = {"ENCODE_BF16", "ENCODE_FP16"})
    void shouldMatchTheScalarTwinWhenNarrowingEveryRoundingCase(TwinKernel kernel) {
        final boolean bf16 = kernel == TwinKernel.ENCODE_BF16;
        final int mantissaBits = bf16 ? 7 : 10;
        final int tie = 1 << (22 - mantissaBits);
        final int[] tails = {0, tie - 1, tie, tie + 1};
        final int[] bits = new int[2 * 256 * tails.length << mantissaBits];
        int n = 0;
        for (int head = 0; head < 1 << (9 + mantissaBits); head++) {
            final int exponent = (head >>> mantissaBits) & 0xff;
            if (bf16 || exponent == 0 || exponent == 255 || (exponent >= 96 && exponent <= 144)) {
                for (int tail : tails) {
                    bits[n++] = (head << (23 - mantissaBits)) | tail;
                }
            }
        }
        final MemorySegment src = MemorySegment.ofArray(bits);
        final MemorySegment scalarDst = MemorySegment.ofArray(new short[n]);
        final MemorySegment vectorDst = MemorySegment.ofArray(new short[n]);

        kernel.run(false, 0f, src, 0, scalarDst, 0, n);
        kernel.run(true, 0f, src, 0, vectorDst, 0, n);

        assertSameBytes(kernel + " over " + n + " rounding cases", scalarDst, vectorDst);
    }

    /**
     * Blocks led by 448 (a multiplier of exactly 1), so that every E4M3 rounding case reaches the
     * conversion as it is: each binade from below the subnormals to above 448, each code's
     * mantissa, with the bits below just under, at and over the tie; then every code dequantized.
     */
    @Test
    void shouldMatchTheScalarTwinWhenQuantizingEveryE4m3RoundingCase() {
        final int[] tails = {0, 0x7ffff, 0x80000, 0x80001, 0xfffff};
        final int perBlock = Fp8RowLayout.BLOCK - 1;
        final int values = 2 * 24 * 8 * tails.length;
        final int hidden = (values + perBlock - 1) / perBlock * Fp8RowLayout.BLOCK;
        final MemorySegment row = MemorySegment.ofArray(new float[hidden]);
        int value = 0;
        for (int i = 0; i < hidden; i++) {
            if (i % Fp8RowLayout.BLOCK == 0 || value >= values) {
                row.set(ScalarKernels.FLOAT, 4L * i, 448f);
                continue;
            }
            final int sign = (value & 1) << 31;
            final int exponent = 127 - 12 + (value >> 1) / (8 * tails.length);
            final int mantissa = ((value >> 1) / tails.length) % 8;
            final int tail = tails[(value >> 1) % tails.length];
            value++;
            final int bits = sign | (exponent << 23) | (mantissa << 20) | tail;
            row.set(ScalarKernels.FLOAT, 4L * i, Float.intBitsToFloat(bits));
        }
        final MemorySegment bf16Row = MemorySegment.ofArray(new short[hidden]);
        ScalarKernels.encode(DType.BF16, row, 0, bf16Row, 0, hidden);
        for (TwinKernel kernel :
                new TwinKernel[] {TwinKernel.QUANTIZE_FP8, TwinKernel.QUANTIZE_FP8_FROM_BF16}) {
            final MemorySegment src = kernel == TwinKernel.QUANTIZE_FP8 ? row : bf16Row;
            final MemorySegment scalarDst =
                    MemorySegment.ofArray(new byte[Fp8RowLayout.rowBytes(hidden)]);
            final MemorySegment vectorDst =
                    MemorySegment.ofArray(new byte[Fp8RowLayout.rowBytes(hidden)]);
            kernel.run(false, 0f, src, 0, scalarDst, 0, hidden);
            kernel.run(true, 0f, src, 0, vectorDst, 0, hidden);
            assertSameBytes(kernel + " over every rounding case", scalarDst, vectorDst);
        }

        final int codes = 256 * 4;
        final MemorySegment fp8 = MemorySegment.ofArray(new byte[Fp8RowLayout.rowBytes(codes)]);
        final float[] scales = {
            1f, 0x1p-20f, 3.3e30f, Float.MIN_VALUE, -2f, 0f, Float.NaN, Float.POSITIVE_INFINITY
        };
        for (int i = 0; i < codes; i++) {
            fp8.set(ScalarKernels.BYTE, i, (byte) i);
        }
        for (int block = 0; block < Fp8RowLayout.blocks(codes); block++) {
            fp8.set(ScalarKernels.FLOAT, Fp8RowLayout.scaleOffset(codes, block), scales[block]);
        }
        final MemorySegment scalarOut = MemorySegment.ofArray(new float[codes]);
        final MemorySegment vectorOut = MemorySegment.ofArray(new float[codes]);
        TwinKernel.DEQUANTIZE_FP8.run(false, 0f, fp8, 0, scalarOut, 0, codes);
        TwinKernel.DEQUANTIZE_FP8.run(true, 0f, fp8, 0, vectorOut, 0, codes);
        assertSameBytes("DEQUANTIZE_FP8 over every code", scalarOut, vectorOut);
    }

    @Test
    void shouldMatchAPlainRowCopyWhenGatheringRows() {
        try (Arena arena = Arena.ofConfined()) {
            int trial = 0;
            for (int rowBytes : new int[] {0, 1, 7, 127, 128, 129, 1000, 7168 * 2}) {
                for (Memory memory : Memory.values()) {
                    final long seed = SEED + trial++;
                    final Random random = new Random(seed);
                    final int rows = 1 + random.nextInt(12);
                    final long srcRowStride = rowBytes + random.nextInt(9);
                    final long srcRowOffset = random.nextInt(5);
                    final long dstRowStride = rowBytes + random.nextInt(9);
                    final long dstOffset = random.nextInt(5);
                    final int[] rowIndex = random.ints(20, 0, rows).toArray();
                    final int from = random.nextInt(5);
                    final int to = from + random.nextInt(rowIndex.length - from + 1);
                    final MemorySegment src =
                            memory.allocate(arena, srcRowOffset + rows * srcRowStride);
                    KernelInputs.fillBytes(src, 0, src.byteSize(), random);
                    final long dstBytes = dstOffset + (to - from) * dstRowStride;
                    final MemorySegment expectedDst = memory.allocate(arena, dstBytes);
                    KernelInputs.fillBytes(expectedDst, 0, dstBytes, random);
                    final MemorySegment gatheredDst =
                            memory.allocate(arena, dstBytes).copyFrom(expectedDst);

                    for (int i = from; i < to; i++) {
                        MemorySegment.copy(
                                src,
                                srcRowOffset + rowIndex[i] * srcRowStride,
                                expectedDst,
                                dstOffset + (i - from) * dstRowStride,
                                rowBytes);
                    }
                    RowKernels.gatherRows(
                            src,
                            rowIndex,
                            from,
                            to,
                            srcRowStride,
                            srcRowOffset,
                            rowBytes,
                            gatheredDst,
                            dstOffset,
                            dstRowStride);

                    assertSameBytes(
                            "gatherRows rowBytes="
                                    + rowBytes
                                    + " memory="
                                    + memory
                                    + " seed="
                                    + seed,
                            expectedDst,
                            gatheredDst);
                }
            }
        }
    }

    private static void assertSameBytes(String what, MemorySegment scalar, MemorySegment vector) {
        final long at = scalar.mismatch(vector);
        if (at >= 0) {
            final long word = at - at % 4;
            final long end = Math.min(word + 4, scalar.byteSize());
            assertThat(at)
                    .as(
                            "%s: byte %d, scalar %s vector %s",
                            what, at, hex(scalar, word, end), hex(vector, word, end))
                    .isEqualTo(-1L);
        }
    }

    private static void compareTwins(
            TwinKernel kernel,
            Arena arena,
            Memory memory,
            int n,
            long srcOffset,
            long dstOffset,
            long seed) {
        final Random random = new Random(seed);
        final MemorySegment src = memory.allocate(arena, srcOffset + kernel.srcBytes(n));
        KernelInputs.fillBytes(src, 0, srcOffset, random);
        kernel.fillSrc(src, srcOffset, n, random);
        final long dstBytes = dstOffset + kernel.dstBytes(n);
        final MemorySegment scalarDst = memory.allocate(arena, dstBytes);
        // accumulate and axpy read their destination: give it floats worth adding to
        KernelInputs.fillBytes(scalarDst, 0, dstOffset, random);
        KernelInputs.fillFloats(scalarDst, dstOffset, (int) (kernel.dstBytes(n) / 4), random);
        final MemorySegment vectorDst = memory.allocate(arena, dstBytes).copyFrom(scalarDst);
        final float w = KernelInputs.anyFloat(random);

        kernel.run(false, w, src, srcOffset, scalarDst, dstOffset, n);
        kernel.run(true, w, src, srcOffset, vectorDst, dstOffset, n);

        final long at = scalarDst.mismatch(vectorDst);
        if (at >= 0) {
            final long word = Math.max(dstOffset, at - (at - dstOffset) % 4);
            final long end = Math.min(word + 4, dstBytes);
            final String detail =
                    String.format(
                            Locale.ROOT,
                            "%s n=%d srcOffset=%d dstOffset=%d memory=%s w=%s seed=%d: byte %d,"
                                    + " scalar %s vector %s",
                            kernel,
                            n,
                            srcOffset,
                            dstOffset,
                            memory,
                            w,
                            seed,
                            at,
                            hex(scalarDst, word, end),
                            hex(vectorDst, word, end));
            assertThat(at).as(detail).isEqualTo(-1L);
        }
    }

    private static String hex(MemorySegment segment, long from, long to) {
        final StringBuilder text = new StringBuilder("0x");
        for (long i = to - 1; i >= from; i--) {
            text.append(String.format(Locale.ROOT, "%02x", segment.get(ScalarKernels.BYTE, i)));
        }
        return text.toString();
    }
}
