package moe.a2a.benchmarks;

import java.nio.FloatBuffer;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.experts.Buffers;
import moe.a2a.experts.ExpertThreads;
import moe.a2a.experts.HeldExpert;
import moe.a2a.experts.SeededWeights;
import moe.a2a.experts.SwiGlu;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One expert's SwiGLU forward pass as a CPU rank serves it ({@link SwiGlu} on the process's {@link
 * ExpertThreads}: every core), the default model's shape (hidden 1024, ffn 2816), on {@code rows}
 * tokens, with its weights held in {@code held}: {@code BF16} as a bf16 checkpoint's are, {@code
 * FP32} as a fp32 one's. Each operation runs the next of {@link #EXPERTS} experts, whose weights
 * (69 MB in bf16) exceed this host's 32 MiB L3, so every operation reads its weights from memory,
 * as a decode step does.
 *
 * <p>The number is microseconds per expert. Weight GB/s = {@code 3·H·I·(2 or 4) / (µs · 10^3)}
 * (17.3 MB bf16, 34.6 MB fp32); GFLOP/s = {@code 6·rows·H·I / (µs · 10^3)}. The baselines to set
 * them against, in the same run: {@code MemoryBandwidthBenchmark.copyOnTwoThreads} (memory read +
 * written by both cores) and this benchmark's own {@code FP32} rows at 512 (OpenBLAS sgemm on every
 * core).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(
        value = 1,
        jvmArgsAppend = {
            "--add-modules=jdk.incubator.vector",
            "--enable-native-access=ALL-UNNAMED",
            "-XX:MaxRAMPercentage=75"
        })
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class ExpertBenchmark {
    static final int HIDDEN = 1024;
    static final int FFN = 2816;
    static final int EXPERTS = 4;

    @Param({"BF16", "FP32"})
    String held;

    @Param({"1", "8", "64", "512"})
    int rows;

    private HeldExpert[] experts;
    private SwiGlu swiGlu;
    private FloatBuffer x;
    private FloatBuffer out;
    private int next;

    @Setup(Level.Trial)
    public void setup() {
        SeededWeights weights = new SeededWeights(1, EXPERTS, HIDDEN, FFN, 1);
        experts = new HeldExpert[EXPERTS];
        for (int e = 0; e < EXPERTS; e++) {
            experts[e] = held.equals("BF16") ? weights.heldExpert(0, e) : weights.expert(0, e);
        }
        swiGlu = new SwiGlu(HIDDEN, ExpertThreads.shared());
        x = Buffers.floats((long) rows * HIDDEN);
        out = Buffers.floats((long) rows * HIDDEN);
        SplittableRandom random = new SplittableRandom(7);
        for (int i = 0; i < x.capacity(); i++) {
            x.put(i, (float) random.nextDouble(-1, 1));
        }
    }

    @Benchmark
    public FloatBuffer forward() {
        swiGlu.forward(experts[next], x, rows, out);
        next = (next + 1) % EXPERTS;
        return out;
    }
}
