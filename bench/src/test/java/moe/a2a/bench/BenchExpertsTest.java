package moe.a2a.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.RankThreads;
import moe.a2a.comm.local.LocalGroup;
import moe.a2a.comm.local.LocalTransportProvider;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.DispatchResult;
import moe.a2a.dispatch.Dispatcher;
import moe.a2a.dispatch.Placement;
import moe.a2a.dispatch.TestRoutings;
import moe.a2a.experts.LayerCheck;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import moe.a2a.workload.BenchWorkload;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The benchmark's expert stage: it computes what the single-process reference layer computes, and a
 * bench run with it keeps its validation and reports a communication share.
 */
@Timeout(60)
class BenchExpertsTest {
    private static final BenchWorkload SMALL =
            new BenchWorkload("small", 3, 40, 64, 12, 3, 0, false, 42);

    @Test
    void shouldComputeTheReferenceLayersOutput() {
        int hidden = 32;
        int ffn = 24;
        int experts = 6;
        int topK = 2;
        int tokens = 17;
        long seed = 9;
        SplittableRandom random = new SplittableRandom(seed);
        Placement placement = Placement.contiguous(experts, 1);
        Dispatcher dispatcher =
                new Dispatcher(new LocalGroup(1).communicator(0), placement, hidden, topK);
        float[] x = new float[tokens * hidden];
        ByteBuffer rows =
                ByteBuffer.allocateDirect(x.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) random.nextGaussian();
            DType.FP32.put(rows, i * Float.BYTES, x[i]);
        }
        int[] ids = TestRoutings.uniform(random, tokens, experts, topK);
        float[] weights = TestRoutings.weights(random, tokens, topK);
        DispatchResult result = dispatcher.dispatch(rows, tokens, DType.FP32, ids, weights);
        new BenchExperts(placement, 0, hidden, ffn, seed)
                .run(result, dispatcher.combineRows(result.handle()));
        FloatBuffer out =
                ByteBuffer.allocateDirect(x.length * Float.BYTES)
                        .order(ByteOrder.nativeOrder())
                        .asFloatBuffer();
        dispatcher.combine(result.handle(), out);
        float[] actual = new float[x.length];
        out.get(0, actual);
        float[] expected =
                new ReferenceMoeLayer(new SeededWeights(seed, experts, hidden, ffn, 1))
                        .forward(0, x, tokens, topK, ids, weights);
        LayerCheck.assertClose("bench experts", DType.FP32, actual, expected, hidden);
    }

    @Test
    void shouldKeepTheValidationAndReportACommunicationShare() throws Exception {
        LocalGroup group = new LocalGroup(SMALL.worldSize(), TimeUnit.SECONDS.toNanos(20));
        Placement placement = Placement.contiguous(SMALL.experts(), SMALL.worldSize());
        int iters = 3;
        List<RankTimes> times =
                RankThreads.run(
                        SMALL.worldSize(),
                        rank ->
                                BenchRun.rank(
                                        SMALL,
                                        BenchScope.DISPATCHER,
                                        group.communicator(rank),
                                        1,
                                        iters,
                                        DispatchDType.BF16,
                                        0,
                                        new BenchExperts(placement, rank, SMALL.hidden(), 16, 3)));
        assertThat(times).allMatch(RankTimes::ok).allMatch(t -> t.expertNs().length == iters);
        BenchReport report =
                BenchReport.of(
                        SMALL, LocalTransportProvider.LOCAL, BenchScope.DISPATCHER, times, 10);
        assertThat(report.hasExperts()).isTrue();
        assertThat(report.communicationShare()).isStrictlyBetween(0.0, 1.0);
        assertThat(report.json(10)).contains("\"communication_share\":");
    }
}
