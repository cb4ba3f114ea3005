package moe.a2a.benchmarks;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import moe.a2a.workload.BenchRouting;
import moe.a2a.workload.BenchWorkload;
import moe.a2a.comm.local.LocalGroup;
import moe.a2a.kernels.DType;
import moe.a2a.dispatch.DispatchResult;
import moe.a2a.dispatch.Dispatcher;
import moe.a2a.dispatch.Placement;
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
 * One full step of the {@link Dispatcher} on a group of one rank hosting all 256 experts, with a
 * canonical workload's tokens and routing: layout, pack, the counts and rows "exchange" (a copy to
 * itself), grouping by expert, the rows sent back unchanged, and the fp32 sum at the source. It
 * measures the dispatcher's own work per step with no waiting on peers; run with {@code -prof gc}
 * for the bytes allocated per step (the buffers are reused, so it should be near zero). It does not
 * measure the transport between ranks (see {@code moe-a2a bench}).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsAppend = "--add-modules=jdk.incubator.vector")
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class DispatchCombineBenchmark {
    @Param({"decode", "prefill"})
    String workload;

    Dispatcher dispatcher;
    ByteBuffer tokens;
    int[] ids;
    float[] weights;
    FloatBuffer out;
    int numTokens;

    @Setup
    public void setup() {
        BenchWorkload w = BenchWorkload.named(workload);
        numTokens = w.tokens();
        ids = BenchRouting.topkIds(w, 0);
        weights = new float[ids.length];
        Arrays.fill(weights, 1f / w.topK());
        tokens = ByteBuffer.allocateDirect(numTokens * w.rowBytes()).order(ByteOrder.LITTLE_ENDIAN);
        for (int t = 0; t < numTokens; t++) {
            for (int c = 0; c < w.hidden(); c++) {
                DType.BF16.put(tokens, (t * w.hidden() + c) * 2, BenchRouting.payload(0, t, c));
            }
        }
        dispatcher =
                new Dispatcher(
                        new LocalGroup(1).communicator(0),
                        Placement.contiguous(w.experts(), 1),
                        w.hidden(),
                        w.topK());
        out =
                ByteBuffer.allocateDirect(numTokens * w.hidden() * Float.BYTES)
                        .order(ByteOrder.nativeOrder())
                        .asFloatBuffer();
    }

    @Benchmark
    public FloatBuffer dispatchAndCombine() {
        DispatchResult result = dispatcher.dispatch(tokens, numTokens, DType.BF16, ids, weights);
        ByteBuffer back = dispatcher.combineRows(result.handle());
        int rowBytes = result.handle().rowLayout().combineRowBytes();
        for (int j = 0; j < result.numRecvTokens(); j++) {
            result.copyRecvToken(j, back, j * rowBytes);
        }
        dispatcher.combine(result.handle(), out);
        return out;
    }
}
