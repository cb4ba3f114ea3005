package moe.a2a.benchmarks;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.RowKernels;
import moe.a2a.kernels.ScalarKernels;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The row kernels on rows of {@code H = 7168} channels, {@code *Vector} through {@link RowKernels}
 * (the Vector API, as the fork adds {@code jdk.incubator.vector}) against {@code *Scalar} through
 * {@link ScalarKernels}. Each invocation processes 512 rows, cycling over {@code rows} off-heap
 * input rows and {@code min(rows, 128)} output rows: 4 rows stay in L2, 512 bf16 rows (7 MB in, 3.7
 * MB out) fit this host's 32 MiB L3 as in {@code ReduceBenchmark}, 4096 (59 MB in) do not.
 *
 * <p>The number is nanoseconds per row; divide by H for nanoseconds per element, and divide the
 * row's bytes (read + written, e.g. 6H for decodeBf16, 10H for accumulateBf16) by it for GB/s. It
 * is one thread on warm, reused buffers; it does not include the exchange that brings the rows,
 * page faults, or contention with other threads for memory bandwidth.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(
        value = 1,
        jvmArgsAppend = {"--add-modules=jdk.incubator.vector"})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class KernelsBenchmark {
    static final int HIDDEN = 7168;
    static final int BATCH = 512;
    private static final ValueLayout.OfFloat FLOAT =
            ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @Param({"4", "512", "4096"})
    int rows;

    /**
     * Whether every kernel has already run through {@link RowKernels} before the measured one is
     * compiled, as in an application: the JIT then compiles it against profiles that the Vector
     * API's interpreted fallbacks have widened, and some kernels come out several times slower.
     */
    @Param({"false", "true"})
    boolean othersFirst;

    private Arena arena;
    private int rowMask;
    private int outMask;
    private long bf16RowBytes;
    private long f32RowBytes;
    private long fp8RowBytes;
    private MemorySegment bf16In;
    private MemorySegment f32In;
    private MemorySegment fp8In;
    private MemorySegment f32Out;
    private MemorySegment bf16Out;
    private MemorySegment fp8Out;
    private int[] rowIndex;

    @Setup(Level.Trial)
    public void setup() {
        if (Integer.bitCount(rows) != 1) {
            throw new IllegalArgumentException("rows: " + rows + " (expected: a power of two)");
        }
        arena = Arena.ofShared();
        rowMask = rows - 1;
        final int outRows = Math.min(rows, 128);
        outMask = outRows - 1;
        bf16RowBytes = 2L * HIDDEN;
        f32RowBytes = 4L * HIDDEN;
        fp8RowBytes = RowKernels.fp8RowBytes(HIDDEN);
        f32In = arena.allocate(rows * f32RowBytes, 64);
        bf16In = arena.allocate(rows * bf16RowBytes, 64);
        fp8In = arena.allocate(rows * fp8RowBytes, 64);
        f32Out = arena.allocate(outRows * f32RowBytes, 64);
        bf16Out = arena.allocate(BATCH * bf16RowBytes, 64);
        fp8Out = arena.allocate(outRows * fp8RowBytes, 64);
        final SplittableRandom random = new SplittableRandom(42);
        for (long i = 0; i < (long) rows * HIDDEN; i++) {
            f32In.setAtIndex(FLOAT, i, (float) (random.nextDouble() * 4 - 2));
        }
        // the scalar twins: no Vector API code runs before the measured kernel unless othersFirst
        ScalarKernels.encode(DType.BF16, f32In, 0, bf16In, 0, rows * HIDDEN);
        for (int r = 0; r < rows; r++) {
            ScalarKernels.quantizeFp8(f32In, r * f32RowBytes, fp8In, r * fp8RowBytes, HIDDEN);
        }
        rowIndex = new int[BATCH];
        for (int i = 0; i < BATCH; i++) {
            rowIndex[i] = random.nextInt(rows);
        }
        if (othersFirst) {
            for (int i = 0; i < 100; i++) {
                runEveryKernelOnce();
            }
        }
    }

    private void runEveryKernelOnce() {
        RowKernels.decode(DType.BF16, bf16In, 0, f32Out, 0, HIDDEN);
        RowKernels.accumulate(DType.BF16, bf16In, 0, f32Out, 0, HIDDEN);
        RowKernels.encode(DType.BF16, f32In, 0, bf16Out, 0, HIDDEN);
        RowKernels.decode(DType.FP16, bf16In, 0, f32Out, 0, HIDDEN);
        RowKernels.accumulate(DType.FP16, bf16In, 0, f32Out, 0, HIDDEN);
        RowKernels.encode(DType.FP16, f32In, 0, bf16Out, 0, HIDDEN);
        RowKernels.axpy(0.25f, f32In, 0, f32Out, 0, HIDDEN);
        RowKernels.quantizeFp8(f32In, 0, fp8Out, 0, HIDDEN);
        RowKernels.quantizeFp8FromBf16(bf16In, 0, fp8Out, 0, HIDDEN);
        RowKernels.dequantizeFp8(fp8In, 0, f32Out, 0, HIDDEN);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public MemorySegment decodeBf16Vector() {
        for (int r = 0; r < BATCH; r++) {
            RowKernels.decode(DType.BF16, bf16In, in(r, bf16RowBytes), f32Out, out(r, f32RowBytes), HIDDEN);
        }
        return f32Out;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public MemorySegment decodeBf16Scalar() {
        for (int r = 0; r < BATCH; r++) {
            ScalarKernels.decode(DType.BF16,
                    bf16In, in(r, bf16RowBytes), f32Out, out(r, f32RowBytes), HIDDEN);
        }
        return f32Out;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public MemorySegment accumulateBf16Vector() {
        for (int r = 0; r < BATCH; r++) {
            RowKernels.accumulate(DType.BF16,
                    bf16In, in(r, bf16RowBytes), f32Out, out(r, f32RowBytes), HIDDEN);
        }
        return f32Out;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public MemorySegment accumulateBf16Scalar() {
        for (int r = 0; r < BATCH; r++) {
            ScalarKernels.accumulate(DType.BF16,
                    bf16In, in(r, bf16RowBytes), f32Out, out(r, f32RowBytes), HIDDEN);
        }
        return f32Out;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public MemorySegment encodeBf16Vector() {
        for (int r = 0; r < BATCH; r++) {
            RowKernels.encode(DType.BF16, f32In, in(r, f32RowBytes), bf16Out, r * bf16RowBytes, HIDDEN);
        }
        return bf16Out;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public MemorySegment encodeBf16Scalar() {
        for (int r = 0; r < BATCH; r++) {
            ScalarKernels.encode(DType.BF16, f32In, in(r, f32RowBytes), bf16Out, r * bf16RowBytes, HIDDEN);
        }
        return bf16Out;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public MemorySegment accumulateFp16Vector() {
        for (int r = 0; r < BATCH; r++) {
            RowKernels.accumulate(DType.FP16,
                    bf16In, in(r, bf16RowBytes), f32Out, out(r, f32RowBytes), HIDDEN);
        }
        return f32Out;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public MemorySegment accumulateFp16Scalar() {
        for (int r = 0; r < BATCH; r++) {
            ScalarKernels.accumulate(DType.FP16,
                    bf16In, in(r, bf16RowBytes), f32Out, out(r, f32RowBytes), HIDDEN);
        }
        return f32Out;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public MemorySegment encodeFp16Vector() {
        for (int r = 0; r < BATCH; r++) {
            RowKernels.encode(DType.FP16, f32In, in(r, f32RowBytes), bf16Out, r * bf16RowBytes, HIDDEN);
        }
        return bf16Out;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public MemorySegment encodeFp16Scalar() {
        for (int r = 0; r < BATCH; r++) {
            ScalarKernels.encode(DType.FP16, f32In, in(r, f32RowBytes), bf16Out, r * bf16RowBytes, HIDDEN);
        }
        return bf16Out;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public MemorySegment axpyVector() {
        for (int r = 0; r < BATCH; r++) {
            RowKernels.axpy(0.25f, f32In, in(r, f32RowBytes), f32Out, out(r, f32RowBytes), HIDDEN);
        }
        return f32Out;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public MemorySegment axpyScalar() {
        for (int r = 0; r < BATCH; r++) {
            ScalarKernels.axpy(
                    0.25f, f32In, in(r, f32RowBytes), f32Out, out(r, f32RowBytes), HIDDEN);
        }
        return f32Out;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public MemorySegment quantizeFp8FromBf16Vector() {
        for (int r = 0; r < BATCH; r++) {
            RowKernels.quantizeFp8FromBf16(
                    bf16In, in(r, bf16RowBytes), fp8Out, out(r, fp8RowBytes), HIDDEN);
        }
        return fp8Out;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public MemorySegment quantizeFp8FromBf16Scalar() {
        for (int r = 0; r < BATCH; r++) {
            ScalarKernels.quantizeFp8FromBf16(
                    bf16In, in(r, bf16RowBytes), fp8Out, out(r, fp8RowBytes), HIDDEN);
        }
        return fp8Out;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public MemorySegment quantizeFp8Vector() {
        for (int r = 0; r < BATCH; r++) {
            RowKernels.quantizeFp8(f32In, in(r, f32RowBytes), fp8Out, out(r, fp8RowBytes), HIDDEN);
        }
        return fp8Out;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public MemorySegment quantizeFp8Scalar() {
        for (int r = 0; r < BATCH; r++) {
            ScalarKernels.quantizeFp8(
                    f32In, in(r, f32RowBytes), fp8Out, out(r, fp8RowBytes), HIDDEN);
        }
        return fp8Out;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public MemorySegment dequantizeFp8Vector() {
        for (int r = 0; r < BATCH; r++) {
            RowKernels.dequantizeFp8(
                    fp8In, in(r, fp8RowBytes), f32Out, out(r, f32RowBytes), HIDDEN);
        }
        return f32Out;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public MemorySegment dequantizeFp8Scalar() {
        for (int r = 0; r < BATCH; r++) {
            ScalarKernels.dequantizeFp8(
                    fp8In, in(r, fp8RowBytes), f32Out, out(r, f32RowBytes), HIDDEN);
        }
        return f32Out;
    }

    /** The pack step: 512 bf16 rows picked at random among {@code rows}, packed contiguously. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public MemorySegment gatherRowsCopy() {
        RowKernels.gatherRows(
                bf16In,
                rowIndex,
                0,
                BATCH,
                bf16RowBytes,
                0,
                (int) bf16RowBytes,
                bf16Out,
                0,
                bf16RowBytes);
        return bf16Out;
    }

    private long in(int r, long rowBytes) {
        return (r & rowMask) * rowBytes;
    }

    private long out(int r, long rowBytes) {
        return (r & outMask) * rowBytes;
    }
}
