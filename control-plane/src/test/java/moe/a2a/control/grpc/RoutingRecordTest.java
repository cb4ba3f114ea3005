package moe.a2a.control.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.tcp.TcpDataPlane;
import moe.a2a.comm.tcp.TcpTransportProvider;
import moe.a2a.control.cluster.EmbeddedCluster;
import moe.a2a.control.cluster.RemoteCluster;
import moe.a2a.control.cluster.RoutingRecorder;
import moe.a2a.control.grpc.MoeGrpcServiceTest.Routing;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import moe.a2a.protocol.RoutingTrace;
import moe.a2a.protocol.TensorCodec;
import moe.a2a.v1.ForwardRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --record-routing}: the trace holds, for the steps sampled and kept, exactly the expert ids
 * each served request's routing chose, in token order, on in-process ranks and on workers.
 */
@Timeout(120)
class RoutingRecordTest {
    static final int E = NcclClusterTest.E;
    static final int K = NcclClusterTest.K;

    final SeededWeights weights = new SeededWeights(11, E, NcclClusterTest.H, NcclClusterTest.I, 1);

    @TempDir Path dir;

    @Test
    void shouldKeepTheLastSampledStepsOfInProcessRanks() throws Exception {
        Path file = dir.resolve("embedded.trace");
        SplittableRandom random = new SplittableRandom(17);
        List<ForwardRequest> sent = new ArrayList<>();
        try (InProcessMoeServer fixture =
                new InProcessMoeServer(
                        new EmbeddedCluster(
                                new ModelConfig(E, NcclClusterTest.H, NcclClusterTest.I, K, 1),
                                weights,
                                Placement.contiguous(E, 4),
                                TimeUnit.SECONDS.toNanos(10)),
                        weights,
                        recording(file, 3, 2))) {
            for (int i = 0; i < 8; i++) {
                Routing routing = i % 3 == 2 ? Routing.LOGITS : Routing.TOPK;
                ForwardRequest request =
                        MoeGrpcServiceTest.request(
                                random, 0, 3 + random.nextInt(20), DType.FP32, routing);
                fixture.stub.forward(request);
                sent.add(request);
            }
        }
        RoutingTrace trace = RoutingTrace.read(file);
        assertThat(trace.experts()).isEqualTo(E);
        assertThat(trace.topK()).isEqualTo(K);
        assertThat(trace.ranks()).isEqualTo(4);
        assertThat(trace.stepsServed()).isEqualTo(8);
        assertThat(trace.sampleEvery()).isEqualTo(2);
        // sampled: steps 0, 2, 4, 6; kept: the last three
        assertThat(trace.steps()).hasSize(3);
        for (int s = 0; s < 3; s++) {
            assertChose("step " + s, sent.get(2 + 2 * s), trace.steps().get(s));
        }
    }

    @Test
    void shouldRecordWhatWorkerRanksChose() throws Exception {
        Path file = dir.resolve("workers.trace");
        RemoteCluster cluster = NcclClusterTest.remoteCluster(TcpTransportProvider.TCP);
        SplittableRandom random = new SplittableRandom(29);
        List<ForwardRequest> sent = new ArrayList<>();
        try (ServedCluster served =
                ServedCluster.start(
                        cluster,
                        weights,
                        NcclClusterTest.WORLD,
                        (tcp, r) -> List.of(new TcpDataPlane(tcp, "127.0.0.1", 0, null)),
                        recording(file, 100, 1))) {
            served.agents.awaitFormed(cluster, "two TCP workers");
            for (int i = 0; i < 3; i++) {
                Routing routing = i == 1 ? Routing.LOGITS : Routing.TOPK;
                ForwardRequest request =
                        MoeGrpcServiceTest.request(random, 0, 5 + 4 * i, DType.BF16, routing);
                served.stub.forward(request);
                sent.add(request);
            }
        }
        RoutingTrace trace = RoutingTrace.read(file);
        assertThat(trace.ranks()).isEqualTo(NcclClusterTest.WORLD);
        assertThat(trace.steps()).hasSize(3);
        for (int s = 0; s < 3; s++) {
            assertChose("step " + s, sent.get(s), trace.steps().get(s));
        }
    }

    private static MoeServer.Settings recording(Path file, int keep, int every) {
        return new MoeServer.Settings(
                8192,
                64,
                1 << 20,
                1 << 20,
                2,
                0,
                0,
                new RoutingRecorder.Settings(file, keep, every));
    }

    /**
     * The step's ids are the request's: as given for top-k routing, the K largest logits (as a set
     * per token) for router logits.
     */
    private static void assertChose(String where, ForwardRequest request, RoutingTrace.Step step) {
        int tokens = (int) request.getHiddenStates().getShape(0);
        assertThat(step.tokens()).as(where + " tokens").isEqualTo(tokens);
        assertThat(step.layer()).as(where + " layer").isZero();
        if (request.hasTopk()) {
            assertThat(step.ids())
                    .as(where)
                    .containsExactly(
                            request.getTopk().getExpertIdsList().stream()
                                    .mapToInt(Integer::intValue)
                                    .toArray());
            return;
        }
        float[] logits = TensorCodec.floats(request.getRouterLogits());
        for (int t = 0; t < tokens; t++) {
            int[] chosen = Arrays.copyOfRange(step.ids(), t * K, (t + 1) * K);
            assertThat(chosen).as(where + " token " + t).containsExactlyInAnyOrder(topK(logits, t));
        }
    }

    /** The K experts with the largest logits of token {@code t}. */
    private static int[] topK(float[] logits, int t) {
        Integer[] order = new Integer[E];
        for (int e = 0; e < E; e++) {
            order[e] = e;
        }
        Arrays.sort(order, (a, b) -> Float.compare(logits[t * E + b], logits[t * E + a]));
        int[] top = new int[K];
        for (int j = 0; j < K; j++) {
            top[j] = order[j];
        }
        return top;
    }
}
