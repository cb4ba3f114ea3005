package moe.a2a.benchmarks;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;
import moe.a2a.dispatch.DType;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Combine's reduction: {@link DType#accumulate} of bf16 rows ({@code H = 7168}) into fp32 output
 * rows, 512 rows cycling over 128 outputs (about 7 MB in, 3.7 MB out: beyond the caches, as in a
 * prefill step). The number is per row; divide by H for nanoseconds per element. It does not
 * include the exchange that brings the rows.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class ReduceBenchmark {
    static final int HIDDEN = 7168;
    static final int ROWS = 512;

    ByteBuffer rows;
    float[] out;

    @Setup
    public void setup() {
        rows = ByteBuffer.allocateDirect(ROWS * HIDDEN * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < ROWS * HIDDEN; i++) {
            DType.BF16.put(rows, 2 * i, (i * 7) % 32);
        }
        out = new float[128 * HIDDEN];
    }

    @Benchmark
    @OperationsPerInvocation(ROWS)
    public float[] accumulateRows() {
        for (int r = 0; r < ROWS; r++) {
            DType.BF16.accumulate(rows, r * HIDDEN * 2, out, (r & 127) * HIDDEN, HIDDEN);
        }
        return out;
    }
}
