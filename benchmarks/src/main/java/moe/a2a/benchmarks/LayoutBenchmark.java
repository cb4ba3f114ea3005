package moe.a2a.benchmarks;

import java.util.concurrent.TimeUnit;
import moe.a2a.workload.BenchRouting;
import moe.a2a.workload.BenchWorkload;
import moe.a2a.bench.BenchPlacement;
import moe.a2a.dispatch.DispatchLayout;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * {@link DispatchLayout#compute} on a canonical workload's routing of rank 0: per-rank counts with
 * dedup, per-expert counts and the pack order. The number is the time for one rank's whole layout
 * ({@code T} tokens × {@code K}); it does not include packing or any exchange. With {@code
 * redundant} slots the placement is the planner's for the workload's loads ({@link
 * BenchPlacement}), and the replica choice runs per token.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsAppend = "--add-modules=jdk.incubator.vector")
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class LayoutBenchmark {
    @Param({"decode", "prefill", "prefill-skew"})
    String workload;

    @Param({"0", "16"})
    int redundant;

    int[] ids;
    int tokens;
    int topK;
    DispatchLayout layout;

    @Setup
    public void setup() {
        BenchWorkload w = BenchWorkload.named(workload);
        ids = BenchRouting.topkIds(w, 0);
        tokens = w.tokens();
        topK = w.topK();
        layout = new DispatchLayout(BenchPlacement.of(w, redundant), 0);
    }

    @Benchmark
    public DispatchLayout layout() {
        layout.compute(ids, tokens, topK);
        return layout;
    }
}
