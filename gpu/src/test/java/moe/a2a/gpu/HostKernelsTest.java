package moe.a2a.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import moe.a2a.kernels.DType;
import org.bytedeco.javacpp.BytePointer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code kernels.cu} itself, compiled for the host ({@link HostLauncher}) and launched through
 * {@link CudaKernels} with its own grids and argument lists, against the Java replays ({@link
 * KernelReplays}) that the other tests match to the CPU path: byte for byte, on random rows in
 * every dtype, rows past one block of threads, odd row sizes, and the FP8 cases that break rounding
 * code. What this cannot see: the device's memory model and its math library ({@code __expf},
 * {@code exp}), and NaN payloads, which x86 keeps and a GPU's arithmetic does not.
 */
class HostKernelsTest {
    private static CudaKernels kernels;

    /**
     * Every "device" buffer of a test, held until it ends: a launch reads them through addresses
     * only, and a buffer no longer referenced could be freed mid-launch.
     */
    private final List<BytePointer> held = new ArrayList<>();

    @BeforeAll
    static void compile() {
        kernels = new CudaKernels(HostLauncher.compiled());
    }

    @AfterEach
    void free() {
        held.forEach(BytePointer::close);
    }

    /**
     * Rows of whole 16-byte chunks (short, and long enough for the four-chunk loop and its tail),
     * and of bytes; 33 rows, so the last block's warps are not all used. At {@code dstOffset} 8 the
     * destination is off 16-byte alignment, which takes the byte loop.
     */
    @ParameterizedTest
    @CsvSource({"48, 0", "46, 0", "4800, 0", "4802, 0", "4800, 8"})
    void shouldGatherRows(int rowBytes, int dstOffset) {
        SplittableRandom random = new SplittableRandom(rowBytes);
        ByteBuffer src = randomBytes(random, 20 * rowBytes);
        int[] index = random.ints(33, 0, 20).toArray();
        BytePointer dst = allocate(dstOffset + index.length * rowBytes);
        kernels.gatherRows(
                device(src),
                device(ints(index)),
                new BytePointer(dst).position(dstOffset),
                rowBytes,
                index.length,
                null);
        assertThat(host(dst, dstOffset + index.length * rowBytes).position(dstOffset).slice())
                .isEqualTo(KernelReplays.gatherRows(src, index, index.length, rowBytes));
    }

    @ParameterizedTest
    @EnumSource(DType.class)
    void shouldSumWeightedExpertOutputs(DType dtype) {
        SplittableRandom random = new SplittableRandom(3 + dtype.ordinal());
        int hidden = 300;
        int tokens = 9;
        int expertRows = 14;
        float[] expertOut = gaussians(random, expertRows * hidden);
        int[] start = starts(random, tokens, 4);
        int[] row = random.ints(start[tokens], 0, expertRows).toArray();
        float[] weight = gaussians(random, start[tokens]);
        BytePointer out = allocate((long) tokens * hidden * dtype.sizeBytes());
        kernels.weightedSum(
                device(floats(expertOut)),
                device(ints(start)),
                device(ints(row)),
                device(floats(weight)),
                out,
                hidden,
                tokens,
                dtype,
                null);
        assertThat(host(out, tokens * hidden * dtype.sizeBytes()))
                .isEqualTo(
                        KernelReplays.weightedSum(
                                expertOut, start, row, weight, tokens, hidden, dtype));
    }

    /**
     * Rows of whole 16-byte chunks take the kernel's chunked loop (bf16 and fp16 at hidden 304 and
     * 2064, fp32 at 300 and 1040: 258 and 260 chunks, past one block of threads), the others its
     * scalar loop.
     */
    @ParameterizedTest
    @CsvSource({
        "BF16, 304",
        "FP16, 304",
        "FP32, 300",
        "BF16, 2064",
        "FP32, 1040",
        "BF16, 300",
        "FP16, 300",
        "FP32, 302"
    })
    void shouldAccumulateReturnedRows(DType dtype, int hidden) {
        SplittableRandom random = new SplittableRandom(5 + dtype.ordinal() + hidden);
        int tokens = 11;
        int returned = 25;
        ByteBuffer rows = rows(random, returned * hidden, dtype);
        int[] start = starts(random, tokens, 4);
        int[] index = random.ints(start[tokens], 0, returned).toArray();
        BytePointer out = allocate((long) tokens * hidden * Float.BYTES);
        kernels.accumulate(
                device(rows),
                device(ints(start)),
                device(ints(index)),
                out,
                hidden,
                tokens,
                dtype,
                null);
        assertSameFloats(out, KernelReplays.accumulate(rows, start, index, tokens, hidden, dtype));
    }

    @ParameterizedTest
    @CsvSource({"BF16, true", "FP16, true", "FP32, true", "FP16, false"})
    void shouldWidenRows(DType dtype, boolean indexed) {
        SplittableRandom random = new SplittableRandom(7 + dtype.ordinal());
        int hidden = 270;
        ByteBuffer src = rows(random, 12 * hidden, dtype);
        int[] index = indexed ? random.ints(17, 0, 12).toArray() : null;
        int rows = indexed ? index.length : 12;
        BytePointer dst = allocate((long) rows * hidden * Float.BYTES);
        kernels.widenRows(
                device(src), indexed ? device(ints(index)) : null, dst, hidden, rows, dtype, null);
        assertSameFloats(dst, KernelReplays.widenRows(src, index, rows, hidden, dtype));
    }

    @Test
    void shouldWidenBf16() {
        int n = 1000;
        ByteBuffer in = rows(new SplittableRandom(11), n, DType.BF16);
        BytePointer out = allocate((long) n * Float.BYTES);
        kernels.bf16ToFp32(device(in), out, n, null);
        assertSameFloats(out, KernelReplays.widen(in, n));
    }

    /**
     * silu(g) * u element by element: within a few ulps of Java's own, since {@code __expf} is
     * {@code expf} on the host and an approximation on a device (no replay is bit-exact).
     */
    @ParameterizedTest
    @EnumSource(
            value = DType.class,
            names = {"BF16", "FP32"})
    void shouldApplySwiGluActivation(DType activation) {
        SplittableRandom random = new SplittableRandom(13);
        int n = 700;
        float[] gate = gaussians(random, n);
        float[] up = gaussians(random, n);
        BytePointer out = allocate((long) n * activation.sizeBytes());
        kernels.siluMul(device(floats(gate)), device(floats(up)), out, n, activation, null);
        ByteBuffer got = host(out, n * activation.sizeBytes());
        for (int i = 0; i < n; i++) {
            float expected = (float) (gate[i] / (1 + Math.exp(-gate[i])) * up[i]);
            float tolerance =
                    Math.abs(expected) * (activation == DType.BF16 ? 0x1p-8f : 0x1p-20f)
                            + Float.MIN_NORMAL;
            assertThat(activation.get(got, i * activation.sizeBytes()))
                    .as("element %d", i)
                    .isCloseTo(expected, org.assertj.core.data.Offset.offset(tolerance));
        }
    }

    /**
     * ll_group over 4 sources' regions of T = 100 (400 received rows, past one block's 256
     * threads), one sending nothing, with region rows of 48 bytes and of 46 (then the odd sources'
     * headers sit on 2-byte boundaries).
     */
    @ParameterizedTest
    @ValueSource(ints = {48, 46})
    void shouldGroupLowLatencyRegionsFromTheirHeaders(int rowBytes) {
        SplittableRandom random = new SplittableRandom(17 + rowBytes);
        LlRegions regions = new LlRegions(4, 100, 3, 4, rowBytes);
        assertLowLatencyGrouping(regions, regions.random(random));
    }

    /**
     * ll_group past one window of slots (300 local slots: windows of 128, 128 and 44), top-8, 3
     * sources of T = 90 (270 rows: a second chunk of 14).
     */
    @Test
    void shouldGroupLowLatencyRegionsOverManySlots() {
        LlRegions regions = new LlRegions(3, 90, 8, 300, 64);
        assertLowLatencyGrouping(regions, regions.random(new SplittableRandom(29)));
    }

    /**
     * A source's malformed header (a count past T, a slot past the rank's, a slot named twice in a
     * row, a slot below -1) is flagged in {@code received} as -1 and grouped as an empty region:
     * the others' lists are as if it sent nothing, and none names a place past the buffers.
     */
    @ParameterizedTest
    @ValueSource(strings = {"count", "slot", "twice", "negative"})
    void shouldGroupAMalformedRegionAsEmptyAndFlagIt(String fault) {
        LlRegions regions = new LlRegions(4, 100, 3, 4, 46);
        ByteBuffer recv = regions.random(new SplittableRandom(23));
        int header = regions.header(1);
        int row = 7; // every source but 2 counts at least T / 2 rows
        int at = header + Integer.BYTES * (1 + row * regions.k());
        switch (fault) {
            case "count" -> recv.putInt(header, regions.bound() + 1);
            case "slot" -> recv.putInt(at + Integer.BYTES, regions.slots());
            case "twice" -> {
                recv.putInt(at, 2);
                recv.putInt(at + Integer.BYTES, 2);
            }
            default -> recv.putInt(at, -2);
        }
        KernelReplays.Grouping flagged = assertLowLatencyGrouping(regions, recv);
        ByteBuffer silent = copy(recv);
        silent.putInt(header, 0);
        KernelReplays.Grouping empty = assertLowLatencyGrouping(regions, silent);
        assertThat(flagged.received())
                .containsExactly(empty.received()[0], -1, 0, empty.received()[3]);
        assertThat(flagged.groupIndex()).isEqualTo(empty.groupIndex());
        assertThat(flagged.start()).isEqualTo(empty.start());
        int entries = empty.start()[regions.rows()];
        assertThat(Arrays.copyOf(flagged.entryRow(), entries))
                .isEqualTo(Arrays.copyOf(empty.entryRow(), entries));
    }

    /** Low-latency regions as a rank receives them: sources, T, top-k, local slots, row bytes. */
    private record LlRegions(int sources, int bound, int k, int slots, int rowBytes) {
        int regionRows() {
            return bound + (LowLatencyPlan.headerBytes(bound, k) + rowBytes - 1) / rowBytes;
        }

        int regionBytes() {
            return regionRows() * rowBytes;
        }

        int rows() {
            return sources * bound;
        }

        /** Byte offset of source {@code s}'s header. */
        int header(int s) {
            return s * regionBytes() + bound * rowBytes;
        }

        /**
         * Random rows; source 2 (where there is one) sends nothing, the others at least T / 2 rows,
         * each counted row naming distinct local slots or -1 (a choice elsewhere).
         */
        ByteBuffer random(SplittableRandom random) {
            ByteBuffer recv = randomBytes(random, sources * regionBytes());
            for (int s = 0; s < sources; s++) {
                int header = header(s);
                recv.putInt(header, s == 2 ? 0 : random.nextInt(bound / 2, bound + 1));
                for (int r = 0; r < bound; r++) {
                    int[] choices = random.ints(0, slots).distinct().limit(k).toArray();
                    for (int q = 0; q < k; q++) {
                        int slot = random.nextInt(3) == 0 ? -1 : choices[q];
                        recv.putInt(header + Integer.BYTES * (1 + r * k + q), slot);
                        recv.putFloat(
                                header + Integer.BYTES * (1 + bound * k + r * k + q),
                                (float) random.nextGaussian());
                    }
                }
            }
            return recv;
        }
    }

    /** Runs ll_group on {@code recv} and matches the replay list by list; returns the replay's. */
    private KernelReplays.Grouping assertLowLatencyGrouping(LlRegions regions, ByteBuffer recv) {
        int sources = regions.sources();
        int bound = regions.bound();
        int k = regions.k();
        int slots = regions.slots();
        int rowBytes = regions.rowBytes();
        int regionRows = regions.regionRows();
        int regionBytes = regions.regionBytes();
        int rows = regions.rows();
        BytePointer groupIndex = allocate((long) slots * rows * Integer.BYTES);
        BytePointer start = allocate((long) (rows + 1) * Integer.BYTES);
        BytePointer entryRow = allocate((long) rows * k * Integer.BYTES);
        BytePointer entryWeight = allocate((long) rows * k * Float.BYTES);
        BytePointer received = allocate((long) sources * Integer.BYTES);
        kernels.llGroup(
                device(recv),
                regionBytes,
                (long) bound * rowBytes,
                regionRows,
                sources,
                bound,
                k,
                slots,
                groupIndex,
                start,
                entryRow,
                entryWeight,
                received,
                null);
        KernelReplays.Grouping expected =
                KernelReplays.llGroup(recv, regionRows, rowBytes, sources, bound, k, slots);
        assertThat(hostInts(groupIndex, slots * rows)).isEqualTo(expected.groupIndex());
        assertThat(hostInts(start, rows + 1)).isEqualTo(expected.start());
        int entries = expected.start()[rows];
        assertThat(hostInts(entryRow, entries))
                .isEqualTo(Arrays.copyOf(expected.entryRow(), entries));
        assertSameFloats(entryWeight, Arrays.copyOf(expected.entryWeight(), entries));
        assertThat(hostInts(received, sources)).isEqualTo(expected.received());
        return expected;
    }

    @ParameterizedTest
    @CsvSource({"300, BF16", "7, BF16", "1100, BF16", "300, FP16", "128, FP32"})
    void shouldQuantizeAndDequantizeFp8Rows(int hidden, DType dtype) {
        SplittableRandom random = new SplittableRandom(19 + hidden);
        int tokens = 6;
        float[] values = new float[tokens * hidden];
        for (int i = 0; i < values.length; i++) {
            int t = i / hidden;
            values[i] =
                    t == 0
                            ? 0f // an all-zero row: the floor on amax
                            : t == 1 ? special(random, i % hidden) : (float) random.nextGaussian();
        }
        ByteBuffer src = encoded(values, dtype);
        int[] index = {2, 0, 1, 5, 1, 4, 3};
        int fp8Bytes = hidden + 4 * ((hidden + 127) / 128);
        BytePointer quantized = allocate((long) index.length * fp8Bytes);
        kernels.quantizeFp8Rows(
                device(src), device(ints(index)), quantized, hidden, index.length, dtype, null);
        ByteBuffer expected =
                KernelReplays.quantizeFp8Rows(src, index, index.length, hidden, dtype);
        ByteBuffer fp8 = host(quantized, index.length * fp8Bytes);
        assertThat(fp8).isEqualTo(expected);

        DType experts = dtype == DType.BF16 ? DType.BF16 : DType.FP32;
        int[] group = {6, 0, 2, 2, 1};
        BytePointer grouped = allocate((long) group.length * hidden * experts.sizeBytes());
        kernels.dequantizeFp8Rows(
                device(fp8), device(ints(group)), grouped, hidden, group.length, experts, null);
        assertThat(host(grouped, group.length * hidden * experts.sizeBytes()))
                .isEqualTo(
                        KernelReplays.dequantizeFp8Rows(fp8, group, group.length, hidden, experts));
    }

    /** Weights held in FP8, tiles of 8 over a 37 x 45 projection (partial tiles on both edges). */
    @ParameterizedTest
    @EnumSource(
            value = DType.class,
            names = {"BF16", "FP32"})
    void shouldMakeFp8HeldWeightsReady(DType dtype) {
        SplittableRandom random = new SplittableRandom(23);
        int rows = 37;
        int cols = 45;
        int block = 8;
        ByteBuffer codes = randomBytes(random, rows * cols);
        codes.put(0, (byte) 0x7f).put(1, (byte) 0xff); // the NaN codes
        float[] scales = new float[5 * 6];
        for (int i = 0; i < scales.length; i++) {
            scales[i] = (float) Math.scalb(random.nextDouble(0.5, 1), random.nextInt(-20, 4));
        }
        BytePointer out = allocate((long) rows * cols * dtype.sizeBytes());
        kernels.fp8Weights(
                device(codes), device(floats(scales)), out, rows, cols, block, dtype, null);
        assertThat(host(out, rows * cols * dtype.sizeBytes()))
                .isEqualTo(KernelReplays.fp8Weights(codes, scales, rows, cols, block, dtype));
    }

    @ParameterizedTest
    @CsvSource({"BF16, true", "FP16, true", "FP32, true", "BF16, false"})
    void shouldAddTheSharedExpert(DType dtype, boolean gated) {
        SplittableRandom random = new SplittableRandom(29 + dtype.ordinal());
        int hidden = 300;
        int tokens = 5;
        float[] shared = gaussians(random, tokens * hidden);
        ByteBuffer x = rows(random, tokens * hidden, dtype);
        float[] gate = gated ? gaussians(random, hidden) : null;
        float[] combined = gaussians(random, tokens * hidden);
        BytePointer out = device(floats(combined));
        kernels.addShared(
                device(floats(shared)),
                device(x),
                gated ? device(floats(gate)) : null,
                out,
                hidden,
                tokens,
                dtype,
                null);
        KernelReplays.addShared(
                shared, x, dtype, gate, combined, hidden, tokens, CudaKernels.THREADS);
        assertSameFloats(out, combined);
    }

    private static float special(SplittableRandom random, int c) {
        return switch (c % 8) {
            case 0 -> Float.NaN;
            case 1 -> Float.POSITIVE_INFINITY;
            case 2 -> Float.NEGATIVE_INFINITY;
            case 3 -> -0f;
            case 4 -> 1e-40f;
            case 5 -> 1e6f;
            case 6 -> Float.intBitsToFloat(0xffc00001);
            default -> (float) random.nextGaussian();
        };
    }

    /** Starts of each token's entries, 0 to {@code most} a token. */
    private static int[] starts(SplittableRandom random, int tokens, int most) {
        int[] start = new int[tokens + 1];
        for (int t = 0; t < tokens; t++) {
            start[t + 1] = start[t] + random.nextInt(most + 1);
        }
        return start;
    }

    private static float[] gaussians(SplittableRandom random, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) random.nextGaussian();
        }
        return v;
    }

    private static ByteBuffer rows(SplittableRandom random, int n, DType dtype) {
        return encoded(gaussians(random, n), dtype);
    }

    private static ByteBuffer encoded(float[] values, DType dtype) {
        ByteBuffer b = buffer(values.length * dtype.sizeBytes());
        dtype.encode(values, 0, values.length, b, 0);
        return b;
    }

    private static ByteBuffer copy(ByteBuffer b) {
        ByteBuffer c = buffer(b.capacity());
        c.put(0, b, 0, b.capacity());
        return c;
    }

    private static ByteBuffer randomBytes(SplittableRandom random, int n) {
        ByteBuffer b = buffer(n);
        for (int i = 0; i < n; i++) {
            b.put(i, (byte) random.nextInt());
        }
        return b;
    }

    private static ByteBuffer ints(int[] values) {
        ByteBuffer b = buffer(values.length * Integer.BYTES);
        b.asIntBuffer().put(values);
        return b;
    }

    private static ByteBuffer floats(float[] values) {
        ByteBuffer b = buffer(values.length * Float.BYTES);
        b.asFloatBuffer().put(values);
        return b;
    }

    private static ByteBuffer buffer(int bytes) {
        return ByteBuffer.allocateDirect(Math.max(1, bytes)).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** {@code b} copied to "device" memory: host memory here, allocated as JavaCPP allocates. */
    private BytePointer device(ByteBuffer b) {
        BytePointer p = allocate(b.capacity());
        p.asBuffer().put(b.duplicate().clear());
        return p;
    }

    /** {@code bytes} of "device" memory, held until the test ends. */
    private BytePointer allocate(long bytes) {
        BytePointer p = new BytePointer(Math.max(1, bytes));
        held.add(p);
        return p;
    }

    private static ByteBuffer host(BytePointer p, int bytes) {
        ByteBuffer b = buffer(bytes);
        b.put(p.limit(bytes).asBuffer());
        return b.clear();
    }

    private static int[] hostInts(BytePointer p, int n) {
        int[] v = new int[n];
        host(p, n * Integer.BYTES).asIntBuffer().get(v);
        return v;
    }

    private static void assertSameFloats(BytePointer p, float[] expected) {
        float[] got = new float[expected.length];
        host(p, expected.length * Float.BYTES).asFloatBuffer().get(got);
        KernelReplays.assertSameBits("host kernel", got, expected, expected.length);
    }
}
