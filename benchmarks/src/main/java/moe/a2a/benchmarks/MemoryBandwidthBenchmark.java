package moe.a2a.benchmarks;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The host's memory-bandwidth baseline for the kernels: one {@link MemorySegment#copy} of a 256 MiB
 * off-heap buffer into another, far beyond any cache. Each operation reads 256 MiB and writes 256
 * MiB: {@code GB/s = 2 × 268435456 / (ms per op × 10^6)}. It is what one thread reaches with the
 * JDK's bulk copy; it is not the machine's peak (non-temporal stores) nor a latency. {@link
 * #copyOnTwoThreads} runs it on two threads at once, each with buffers of its own: the rate of a
 * computation that keeps both cores of this host reading.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(
        value = 1,
        jvmArgsAppend = {"--add-modules=jdk.incubator.vector"})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class MemoryBandwidthBenchmark {
    /** Bytes read, and again written, per operation. */
    public static final long BUFFER_BYTES = 256L << 20;

    private Arena arena;
    private MemorySegment src;
    private MemorySegment dst;

    @Setup(Level.Trial)
    public void setup() {
        arena = Arena.ofShared();
        src = arena.allocate(BUFFER_BYTES, 4096);
        dst = arena.allocate(BUFFER_BYTES, 4096);
        // touch every page up front, so that no page fault is timed
        src.fill((byte) 1);
        dst.fill((byte) 2);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    public MemorySegment copy() {
        MemorySegment.copy(src, 0, dst, 0, BUFFER_BYTES);
        return dst;
    }

    /** {@link #copy} on two threads: each thread's time per copy of its own 256 MiB. */
    @Benchmark
    @Threads(2)
    public MemorySegment copyOnTwoThreads() {
        MemorySegment.copy(src, 0, dst, 0, BUFFER_BYTES);
        return dst;
    }
}
