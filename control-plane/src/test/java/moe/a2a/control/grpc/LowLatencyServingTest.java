package moe.a2a.control.grpc;

import static moe.a2a.control.grpc.MoeGrpcServiceTest.E;
import static moe.a2a.control.grpc.MoeGrpcServiceTest.H;
import static moe.a2a.control.grpc.MoeGrpcServiceTest.I;
import static moe.a2a.control.grpc.MoeGrpcServiceTest.K;
import static moe.a2a.control.grpc.MoeGrpcServiceTest.LAYERS;
import static moe.a2a.control.grpc.MoeGrpcServiceTest.PLACEMENT;
import static moe.a2a.control.grpc.MoeGrpcServiceTest.SEED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.function.Function;
import moe.a2a.comm.DataPlane;
import moe.a2a.comm.Transport;
import moe.a2a.comm.nccl.NcclDataPlane;
import moe.a2a.comm.nccl.NcclTransportProvider;
import moe.a2a.comm.nccl.SimulatedNccl;
import moe.a2a.comm.tcp.TcpDataPlane;
import moe.a2a.comm.tcp.TcpTransport;
import moe.a2a.comm.tcp.TcpTransportProvider;
import moe.a2a.control.cluster.EmbeddedCluster;
import moe.a2a.control.cluster.QuietListener;
import moe.a2a.control.cluster.RemoteCluster;
import moe.a2a.control.cluster.StepModes;
import moe.a2a.control.grpc.MoeGrpcServiceTest.Routing;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import moe.a2a.v1.ModelSpec;
import moe.a2a.v1.MoeServiceGrpc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Serving with {@code --mode}: the same requests answered by in-process ranks and by worker agents
 * over TCP in normal, low-latency and auto mode give the same bytes; each answer's stats name the
 * mode its step ran in; a step over the bound runs in normal mode under auto and is refused, naming
 * the flag, under low-latency.
 */
@Timeout(120)
class LowLatencyServingTest {
    static final int BOUND = 8;

    final SeededWeights weights = new SeededWeights(SEED, E, H, I, LAYERS);
    final ModelConfig model = new ModelConfig(E, H, I, K, LAYERS);

    @Test
    void inProcessRanksShouldAnswerTheSameInEveryMode() throws Exception {
        List<ForwardRequest> requests = requests();
        List<ForwardResponse> normal = serveInProcess(StepModes.NORMAL, requests);
        List<ForwardResponse> low =
                serveInProcess(new StepModes(StepModes.Choice.LOW_LATENCY, 2 * BOUND), requests);
        List<ForwardResponse> auto =
                serveInProcess(new StepModes(StepModes.Choice.AUTO, BOUND), requests);
        for (int i = 0; i < requests.size(); i++) {
            assertThat(low.get(i).getHiddenStates())
                    .as("request %d low-latency", i)
                    .isEqualTo(normal.get(i).getHiddenStates());
            assertThat(auto.get(i).getHiddenStates())
                    .as("request %d auto", i)
                    .isEqualTo(normal.get(i).getHiddenStates());
            assertThat(normal.get(i).getStats().getMode()).isEqualTo("normal");
            assertThat(low.get(i).getStats().getMode()).isEqualTo("low-latency");
            int tokens = (int) requests.get(i).getHiddenStates().getShape(0);
            assertThat(auto.get(i).getStats().getMode())
                    .as("request %d of %d tokens under auto", i, tokens)
                    .isEqualTo(
                            Math.ceilDiv(tokens, MoeGrpcServiceTest.N) <= BOUND
                                    ? "low-latency"
                                    : "normal");
        }
        assertThat(auto).extracting(r -> r.getStats().getMode()).contains("low-latency", "normal");
    }

    @Test
    void lowLatencyModeShouldRefuseAStepOverItsBound() throws Exception {
        try (InProcessMoeServer served =
                new InProcessMoeServer(
                        inProcess(),
                        weights,
                        settings(new StepModes(StepModes.Choice.LOW_LATENCY, BOUND)))) {
            ForwardRequest big =
                    MoeGrpcServiceTest.request(
                            new SplittableRandom(3),
                            0,
                            MoeGrpcServiceTest.N * BOUND + 1,
                            DType.BF16,
                            Routing.TOPK);
            assertThatThrownBy(() -> served.stub.forward(big))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> {
                                assertThat(e.getStatus().getCode())
                                        .isEqualTo(Status.Code.INVALID_ARGUMENT);
                                assertThat(e.getStatus().getDescription())
                                        .contains("puts 9 on a rank")
                                        .contains(
                                                "at most --ll-max-tokens 8 in --mode low-latency");
                            });
            ForwardRequest small =
                    MoeGrpcServiceTest.request(
                            new SplittableRandom(4), 0, 5, DType.BF16, Routing.TOPK);
            assertThat(served.stub.forward(small).getStats().getMode()).isEqualTo("low-latency");
        }
    }

    @Test
    void workersOverTcpShouldAnswerTheSameInLowLatencyMode() throws Exception {
        List<ForwardRequest> requests = requests().subList(0, 6);
        List<ForwardResponse> normal = serveOverTcp(StepModes.NORMAL, requests);
        List<ForwardResponse> low =
                serveOverTcp(new StepModes(StepModes.Choice.AUTO, BOUND), requests);
        assertSameAnswers(requests, normal, low);
    }

    /** Ranks over NCCL (simulated here: host-path ranks, as a worker without a GPU runs). */
    @Test
    void workersOverNcclShouldAnswerTheSameInLowLatencyMode() throws Exception {
        List<ForwardRequest> requests = requests().subList(0, 6);
        SimulatedNccl nccl = new SimulatedNccl();
        List<ForwardResponse> normal =
                serveOnWorkers(
                        NcclTransportProvider.NCCL,
                        (tcp, r) -> List.of(new NcclDataPlane(nccl)),
                        StepModes.NORMAL,
                        requests);
        List<ForwardResponse> low =
                serveOnWorkers(
                        NcclTransportProvider.NCCL,
                        (tcp, r) -> List.of(new NcclDataPlane(nccl)),
                        new StepModes(StepModes.Choice.AUTO, BOUND),
                        requests);
        assertSameAnswers(requests, normal, low);
    }

    private static void assertSameAnswers(
            List<ForwardRequest> requests,
            List<ForwardResponse> normal,
            List<ForwardResponse> low) {
        for (int i = 0; i < requests.size(); i++) {
            assertThat(low.get(i).getHiddenStates())
                    .as("request %d", i)
                    .isEqualTo(normal.get(i).getHiddenStates());
        }
        assertThat(low).extracting(r -> r.getStats().getMode()).contains("low-latency");
    }

    /**
     * Requests of 1 to 40 tokens, every dtype and routing: at most 10 a rank, some over {@link
     * #BOUND}.
     */
    private static List<ForwardRequest> requests() {
        SplittableRandom random = new SplittableRandom(21);
        List<ForwardRequest> out = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            out.add(
                    MoeGrpcServiceTest.request(
                            random,
                            i % LAYERS,
                            1 + random.nextInt(40),
                            DType.values()[i % DType.values().length],
                            Routing.values()[i % Routing.values().length]));
        }
        return out;
    }

    private List<ForwardResponse> serveInProcess(StepModes modes, List<ForwardRequest> requests)
            throws Exception {
        try (InProcessMoeServer served =
                new InProcessMoeServer(inProcess(), weights, settings(modes))) {
            return answer(served.stub, requests);
        }
    }

    private List<ForwardResponse> serveOverTcp(StepModes modes, List<ForwardRequest> requests)
            throws Exception {
        return serveOnWorkers(
                TcpTransportProvider.TCP,
                (tcp, r) -> List.of(new TcpDataPlane(tcp, "127.0.0.1", 0, null)),
                modes,
                requests);
    }

    private List<ForwardResponse> serveOnWorkers(
            Transport transport,
            BiFunction<TcpTransport, Integer, List<DataPlane>> planes,
            StepModes modes,
            List<ForwardRequest> requests)
            throws Exception {
        RemoteCluster cluster =
                new RemoteCluster(
                        model,
                        ModelSpec.newBuilder()
                                .setExperts(E)
                                .setHidden(H)
                                .setFfn(I)
                                .setTopK(K)
                                .setLayers(LAYERS)
                                .setSeed(SEED)
                                .build(),
                        "test",
                        PLACEMENT,
                        transport,
                        TimeUnit.SECONDS.toNanos(10),
                        TimeUnit.SECONDS.toNanos(30),
                        new QuietListener());
        try (ServedCluster served =
                ServedCluster.start(
                        cluster, weights, MoeGrpcServiceTest.N, planes, settings(modes))) {
            served.agents.awaitFormed(cluster, "four " + transport + " workers");
            return answer(served.stub, requests);
        }
    }

    /** One request at a time, so that each is a step of its own. */
    private static List<ForwardResponse> answer(
            MoeServiceGrpc.MoeServiceBlockingStub stub, List<ForwardRequest> requests) {
        Function<ForwardRequest, ForwardResponse> forward = stub::forward;
        return requests.stream().map(forward).toList();
    }

    private EmbeddedCluster inProcess() {
        return new EmbeddedCluster(model, weights, PLACEMENT, TimeUnit.SECONDS.toNanos(10));
    }

    private static MoeServer.Settings settings(StepModes modes) {
        return new MoeServer.Settings(
                64, 256, 1 << 20, MoeGrpcServiceTest.MAX_REQUEST_BYTES, 2, 0, 0, null, modes);
    }
}
