package moe.a2a.control.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import moe.a2a.control.cluster.EmbeddedCluster;
import moe.a2a.dispatch.Gate;
import moe.a2a.dispatch.Placement;
import moe.a2a.dispatch.PlacementPlanner;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import moe.a2a.protocol.TensorCodec;
import moe.a2a.v1.DescribeModelRequest;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import moe.a2a.v1.ModelInfo;
import moe.a2a.v1.MoeServiceGrpc;
import moe.a2a.v1.RouteRequest;
import moe.a2a.v1.RouteResponse;
import moe.a2a.v1.StepStats;
import moe.a2a.v1.Tensor;
import moe.a2a.v1.TopK;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** MoeService end to end over an in-process channel, answers checked against the reference. */
@Timeout(120)
public class MoeGrpcServiceTest {
    static final int E = 8;
    static final int H = 32;
    static final int I = 48;
    static final int K = 2;
    static final int LAYERS = 2;
    static final int N = 4;
    static final long SEED = 7;
    static final int MAX_REQUEST_BYTES = 64 * 1024;

    final SeededWeights weights = new SeededWeights(SEED, E, H, I, LAYERS);
    final ModelConfig model = new ModelConfig(E, H, I, K, LAYERS);
    final ReferenceAnswers answers = new ReferenceAnswers(weights, K);

    /**
     * Twelve slots for eight experts, placed by the planner for random loads (replicas with uneven
     * shares), so that answers show the coordinator's placement and the replica choice are used.
     */
    static final Placement PLACEMENT = replicatedPlacement(new SplittableRandom(11), 3);

    MoeServer server;
    String serverName;
    ManagedChannel channel;
    MoeServiceGrpc.MoeServiceBlockingStub stub;

    @BeforeEach
    void start() throws Exception {
        serverName = InProcessServerBuilder.generateName();
        server =
                MoeServer.start(
                        InProcessServerBuilder.forName(serverName).directExecutor(),
                        cluster(),
                        weights,
                        settings(),
                        new SimpleMeterRegistry(),
                        true);
        channel = InProcessChannelBuilder.forName(serverName).directExecutor().build();
        stub = MoeServiceGrpc.newBlockingStub(channel);
    }

    @AfterEach
    void stop() throws Exception {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        server.close();
    }

    /** How a request routes its tokens: top-k given, router logits, or the model's gate. */
    public enum Routing {
        TOPK,
        LOGITS,
        GATE
    }

    static Stream<Arguments> forwardCases() {
        return Stream.of(
                Arguments.of(DType.FP32, Routing.TOPK, 13),
                Arguments.of(DType.BF16, Routing.TOPK, 40),
                Arguments.of(DType.FP16, Routing.LOGITS, 9),
                Arguments.of(DType.FP32, Routing.GATE, 7),
                Arguments.of(DType.BF16, Routing.GATE, 3),
                Arguments.of(DType.FP32, Routing.LOGITS, 2));
    }

    @ParameterizedTest(name = "{0} {1} T={2}")
    @MethodSource("forwardCases")
    void shouldMatchReferenceWhenForwarding(DType dtype, Routing routing, int tokens) {
        for (int layer = 0; layer < LAYERS; layer++) {
            long seed = dtype.ordinal() * 100L + routing.ordinal() * 10L + layer;
            ForwardRequest request =
                    request(new SplittableRandom(seed), layer, tokens, dtype, routing);
            ForwardResponse response = stub.forward(request);
            assertThat(response.getHiddenStates().getDtype())
                    .isEqualTo(request.getHiddenStates().getDtype());
            assertThat(response.getHiddenStates().getShapeList())
                    .containsExactly((long) tokens, (long) H);
            assertMatchesReference("seed=" + seed, request, response);
            assertThat(
                            response.getStats().getTokensPerExpertList().stream()
                                    .mapToLong(Long::longValue)
                                    .sum())
                    .isGreaterThanOrEqualTo((long) tokens * K);
            assertThat(response.getStats().getTokensPerRankCount()).isEqualTo(N);
            StepStats stats = response.getStats();
            // every kept assignment is computed on exactly one rank
            assertThat(stats.getPairsPerRankList().stream().mapToLong(Long::longValue).sum())
                    .isEqualTo(
                            stats.getTokensPerExpertList().stream()
                                    .mapToLong(Long::longValue)
                                    .sum());
            for (int r = 0; r < N; r++) {
                assertThat(stats.getRemoteTokensPerRank(r))
                        .isBetween(0L, stats.getTokensPerRank(r));
                assertThat(stats.getTokensPerRank(r)).isLessThanOrEqualTo(stats.getPairsPerRank(r));
            }
            assertThat(response.getStats().getPlacementVersion()).isEqualTo(PLACEMENT.version());
        }
    }

    @Test
    void shouldAnswerEmptyTensorWhenNoTokens() {
        ForwardRequest request =
                ForwardRequest.newBuilder()
                        .setHiddenStates(
                                Tensor.newBuilder()
                                        .setDtype(moe.a2a.v1.DType.BF16)
                                        .addShape(0)
                                        .addShape(H))
                        .setTopk(TopK.newBuilder().setK(K))
                        .build();
        ForwardResponse response = stub.forward(request);
        assertThat(response.getHiddenStates().getShapeList()).containsExactly(0L, (long) H);
        assertThat(response.getHiddenStates().getData().size()).isZero();
        assertThat(response.getHiddenStates().getDtype()).isEqualTo(moe.a2a.v1.DType.BF16);
    }

    @Test
    void shouldReturnOwnAnswerToEachOfSixteenConcurrentClients() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(16);
        try {
            List<Future<?>> clients = new ArrayList<>();
            for (int c = 0; c < 16; c++) {
                final int client = c;
                clients.add(
                        pool.submit(
                                () -> {
                                    ManagedChannel own =
                                            InProcessChannelBuilder.forName(serverName).build();
                                    try {
                                        MoeServiceGrpc.MoeServiceBlockingStub s =
                                                MoeServiceGrpc.newBlockingStub(own);
                                        for (int round = 0; round < 3; round++) {
                                            long seed = 1000L + client * 10 + round;
                                            DType dtype = client % 2 == 0 ? DType.BF16 : DType.FP32;
                                            Routing routing = Routing.values()[client % 3];
                                            ForwardRequest request =
                                                    request(
                                                            new SplittableRandom(seed),
                                                            client % LAYERS,
                                                            1 + client % 7,
                                                            dtype,
                                                            routing);
                                            assertMatchesReference(
                                                    "seed=" + seed, request, s.forward(request));
                                        }
                                    } finally {
                                        own.shutdownNow();
                                    }
                                    return null;
                                }));
            }
            for (Future<?> f : clients) {
                f.get(100, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void shouldRouteLikeReferenceWhenGivenLogits() {
        SplittableRandom random = new SplittableRandom(3);
        int tokens = 20;
        float[] logits = new float[tokens * E];
        for (int i = 0; i < logits.length; i++) {
            // expert 0 is hot, so the imbalance is visible
            logits[i] = (float) random.nextGaussian() + (i % E == 0 ? 3f : 0f);
        }
        RouteResponse route =
                stub.route(
                        RouteRequest.newBuilder()
                                .setRouterLogits(TensorCodec.tensor(DType.FP32, tokens, E, logits))
                                .build());
        int[] ids = new int[tokens * K];
        float[] w = new float[tokens * K];
        Gate.softmaxTopK(logits, tokens, E, K, ids, w);
        long[] perRank = new long[N];
        long[] perExpert = new long[E];
        for (int t = 0; t < tokens; t++) {
            boolean[] seen = new boolean[N];
            for (int j = 0; j < K; j++) {
                int i = t * K + j;
                int rank = route.getRanks(i);
                assertThat(hosts(ids[i], rank))
                        .as("token %d choice %d: rank %d hosts expert %d", t, j, rank, ids[i])
                        .isTrue();
                assertThat(route.getExpertIds(i)).isEqualTo(ids[i]);
                assertThat(route.getWeights(i)).isEqualTo(w[i]);
                assertThat(route.getRanks(i)).isEqualTo(rank);
                perExpert[ids[i]]++;
                if (!seen[rank]) {
                    seen[rank] = true;
                    perRank[rank]++;
                }
            }
        }
        assertThat(route.getPlacementVersion()).isEqualTo(PLACEMENT.version());
        assertThat(route.getTokensPerRankList()).containsExactlyElementsOf(boxed(perRank));
        assertThat(route.getTokensPerExpertList()).containsExactlyElementsOf(boxed(perExpert));
        assertThat(route.getExpertImbalance())
                .isCloseTo(
                        java.util.Arrays.stream(perExpert).max().getAsLong()
                                * E
                                / (double) (tokens * K),
                        org.assertj.core.data.Offset.offset(1e-9));
        assertThat(route.getExpertImbalance()).isGreaterThan(1.0);
    }

    @Test
    void shouldDescribeServedModel() {
        ModelInfo info = stub.describeModel(DescribeModelRequest.getDefaultInstance());
        assertThat(info.getExperts()).isEqualTo(E);
        assertThat(info.getHidden()).isEqualTo(H);
        assertThat(info.getFfn()).isEqualTo(I);
        assertThat(info.getTopK()).isEqualTo(K);
        assertThat(info.getLayers()).isEqualTo(LAYERS);
        assertThat(info.getWorldSize()).isEqualTo(N);
        assertThat(info.getTransport()).isEqualTo("local");
        assertThat(info.getWeightsSource()).isEqualTo("seeded:" + SEED);
        assertThat(info.getDispatchDtype()).isEqualTo("bf16");
        assertThat(info.getSlots()).isEqualTo(12);
        assertThat(info.getPlacementVersion()).isEqualTo(PLACEMENT.version());
    }

    @Test
    void shouldReportServingWhenRanksAreUp() {
        HealthCheckResponse health =
                HealthGrpc.newBlockingStub(channel)
                        .check(
                                HealthCheckRequest.newBuilder()
                                        .setService(MoeServiceGrpc.SERVICE_NAME)
                                        .build());
        assertThat(health.getStatus()).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
    }

    static Stream<Arguments> badRequests() {
        return Stream.of(
                bad(
                        "dtype unspecified",
                        b ->
                                b.setHiddenStates(
                                        b.getHiddenStates().toBuilder()
                                                .setDtype(moe.a2a.v1.DType.DTYPE_UNSPECIFIED)),
                        "hidden_states.dtype: DTYPE_UNSPECIFIED"),
                bad(
                        "dtype unknown",
                        b -> b.setHiddenStates(b.getHiddenStates().toBuilder().setDtypeValue(42)),
                        "hidden_states.dtype: unknown value"),
                bad(
                        "shape not [T, H]",
                        b -> b.setHiddenStates(b.getHiddenStates().toBuilder().setShape(1, H + 1)),
                        "hidden_states.shape: [4, 33] (expected: [T, 32]"),
                bad(
                        "shape 3-D",
                        b -> b.setHiddenStates(b.getHiddenStates().toBuilder().addShape(1)),
                        "hidden_states.shape: [4, 32, 1]"),
                bad(
                        "data length",
                        b ->
                                b.setHiddenStates(
                                        b.getHiddenStates().toBuilder()
                                                .setData(
                                                        b.getHiddenStates()
                                                                .getData()
                                                                .substring(1))),
                        "hidden_states.data: 255 bytes (expected: 4 × 32 × 2 = 256)"),
                bad(
                        "k differs",
                        b -> b.setTopk(b.getTopk().toBuilder().setK(3)),
                        "topk.k: 3 (expected: 2"),
                bad(
                        "expert out of range",
                        b -> b.setTopk(b.getTopk().toBuilder().setExpertIds(3, 300)),
                        "topk.expert_ids[1][1]: 300 (expected: in [0, 8))"),
                bad(
                        "expert negative",
                        b -> b.setTopk(b.getTopk().toBuilder().setExpertIds(0, -1)),
                        "topk.expert_ids[0][0]: -1"),
                bad(
                        "duplicate experts",
                        b ->
                                b.setTopk(
                                        b.getTopk().toBuilder()
                                                .setExpertIds(5, b.getTopk().getExpertIds(4))),
                        "topk.expert_ids[2][1]"),
                bad(
                        "weight NaN",
                        b -> b.setTopk(b.getTopk().toBuilder().setWeights(2, Float.NaN)),
                        "topk.weights[1][0]: NaN (expected: finite)"),
                bad(
                        "weight infinite",
                        b ->
                                b.setTopk(
                                        b.getTopk().toBuilder()
                                                .setWeights(7, Float.POSITIVE_INFINITY)),
                        "topk.weights[3][1]: Infinity"),
                bad(
                        "topk too short",
                        b -> b.setTopk(b.getTopk().toBuilder().clearExpertIds().addExpertIds(1)),
                        "topk.expert_ids: 1 values (expected: T × K = 4 × 2 = 8)"),
                bad(
                        "logits shape",
                        b ->
                                b.setRouterLogits(
                                        TensorCodec.tensor(
                                                DType.FP32, 4, E - 1, new float[4 * (E - 1)])),
                        "router_logits.shape: [4, 7] (expected: [4, 8]"),
                bad(
                        "logits NaN",
                        b ->
                                b.setRouterLogits(
                                        TensorCodec.tensor(DType.FP32, 4, E, nanAt(4 * E, 9))),
                        "router_logits[1][1]: NaN"),
                bad(
                        "layer out of range",
                        b -> b.setLayer(LAYERS),
                        "layer: 2 (expected: one of the model's MoE layers [0, 1])"),
                bad("layer negative", b -> b.setLayer(-1), "layer: -1"),
                bad(
                        "token count overflows with empty data",
                        b ->
                                b.setHiddenStates(
                                        b.getHiddenStates().toBuilder()
                                                .setShape(0, 1L << 54)
                                                .setData(ByteString.EMPTY)),
                        "hidden_states.shape[0]: 18014398509481984 (expected: at most 33554431"
                                + " rows of 32 × 2 bytes)"));
    }

    @Test
    void shouldRefuseBytesThatAreNotARequestMessage() {
        MethodDescriptor<byte[], byte[]> raw =
                MoeServiceGrpc.getForwardMethod().toBuilder(new RawBytes(), new RawBytes()).build();
        byte[] junk = {(byte) 0xff, (byte) 0xff, (byte) 0xff, 0x07, 'x'};
        assertThatThrownBy(
                        () ->
                                ClientCalls.blockingUnaryCall(
                                        channel, raw, CallOptions.DEFAULT, junk))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode())
                                    .isEqualTo(Status.Code.INVALID_ARGUMENT);
                            assertThat(e.getStatus().getDescription())
                                    .startsWith(
                                            "request: not a moe.a2a.v1.MoeService/Forward request"
                                                    + " message");
                        });
        ForwardRequest good = request(new SplittableRandom(12), 0, 3, DType.FP32, Routing.TOPK);
        assertMatchesReference("after junk", good, stub.forward(good));
    }

    /** Request and response bytes as they are. */
    private static final class RawBytes implements MethodDescriptor.Marshaller<byte[]> {
        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            try {
                return stream.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    @Test
    void shouldBlameRouterLogitsWhenRouteGetsThemWithoutAShape() {
        assertThatThrownBy(
                        () ->
                                stub.route(
                                        RouteRequest.newBuilder()
                                                .setRouterLogits(
                                                        Tensor.newBuilder()
                                                                .setDtype(moe.a2a.v1.DType.FP32))
                                                .build()))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode())
                                    .isEqualTo(Status.Code.INVALID_ARGUMENT);
                            assertThat(e.getStatus().getDescription())
                                    .isEqualTo(
                                            "router_logits.shape: [] (expected: [T, 8] with T >= 0)");
                        });
        assertThatThrownBy(
                        () ->
                                stub.route(
                                        RouteRequest.newBuilder()
                                                .setHiddenStates(
                                                        Tensor.newBuilder()
                                                                .setDtype(moe.a2a.v1.DType.BF16)
                                                                .addShape(1L << 54)
                                                                .addShape(H))
                                                .build()))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e ->
                                assertThat(e.getStatus().getCode())
                                        .isEqualTo(Status.Code.INVALID_ARGUMENT));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badRequests")
    void shouldRejectWithInvalidArgumentNamingField(
            String what, UnaryOperator<ForwardRequest.Builder> breakIt, String message) {
        ForwardRequest good = request(new SplittableRandom(5), 0, 4, DType.BF16, Routing.TOPK);
        ForwardRequest bad = breakIt.apply(good.toBuilder()).build();
        assertThatThrownBy(() -> stub.forward(bad))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode())
                                    .isEqualTo(Status.Code.INVALID_ARGUMENT);
                            assertThat(e.getStatus().getDescription()).contains(message);
                        });
        // the bad request changed nothing: a good one still gets the reference answer
        assertMatchesReference("after " + what, good, stub.forward(good));
    }

    @Test
    void shouldRejectWithResourceExhaustedWhenRequestTooLarge() throws Exception {
        // the size limit is enforced where messages are deserialized: over a real socket
        try (MoeServer netty =
                MoeServer.start(
                        NettyServerBuilder.forAddress(
                                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)),
                        cluster(),
                        weights,
                        settings(),
                        new SimpleMeterRegistry(),
                        true)) {
            ManagedChannel loopback =
                    NettyChannelBuilder.forAddress("127.0.0.1", netty.port())
                            .usePlaintext()
                            .build();
            try {
                MoeServiceGrpc.MoeServiceBlockingStub s = MoeServiceGrpc.newBlockingStub(loopback);
                int tokens = MAX_REQUEST_BYTES / (H * 4) + 1;
                ForwardRequest big =
                        request(new SplittableRandom(9), 0, tokens, DType.FP32, Routing.GATE);
                assertThatThrownBy(() -> s.forward(big))
                        .isInstanceOfSatisfying(
                                StatusRuntimeException.class,
                                e ->
                                        assertThat(e.getStatus().getCode())
                                                .isEqualTo(Status.Code.RESOURCE_EXHAUSTED));
                // zeros that gzip squeezes under the limit and inflate past it
                ForwardRequest bomb =
                        ForwardRequest.newBuilder()
                                .setHiddenStates(
                                        TensorCodec.tensor(
                                                DType.FP32,
                                                tokens,
                                                H,
                                                ByteString.copyFrom(new byte[tokens * H * 4])))
                                .build();
                assertThatThrownBy(() -> s.withCompression("gzip").forward(bomb))
                        .isInstanceOfSatisfying(
                                StatusRuntimeException.class,
                                e ->
                                        assertThat(e.getStatus().getCode())
                                                .isEqualTo(Status.Code.RESOURCE_EXHAUSTED));
                ForwardRequest good =
                        request(new SplittableRandom(10), 1, 5, DType.FP32, Routing.GATE);
                assertMatchesReference("after oversize", good, s.forward(good));
            } finally {
                loopback.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    private void assertMatchesReference(
            String where, ForwardRequest request, ForwardResponse response) {
        answers.assertMatches(where, request, response);
    }

    public static ForwardRequest request(
            SplittableRandom random, int layer, int tokens, DType dtype, Routing routing) {
        ByteBuffer data =
                ByteBuffer.allocate(tokens * H * dtype.sizeBytes()).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < tokens * H; i++) {
            dtype.put(data, i * dtype.sizeBytes(), (float) random.nextGaussian());
        }
        ForwardRequest.Builder b =
                ForwardRequest.newBuilder()
                        .setLayer(layer)
                        .setHiddenStates(
                                TensorCodec.tensor(
                                        dtype, tokens, H, ByteString.copyFrom(data.array())));
        if (routing == Routing.TOPK) {
            TopK.Builder topk = TopK.newBuilder().setK(K);
            for (int t = 0; t < tokens; t++) {
                int a = random.nextInt(E);
                int c = (a + 1 + random.nextInt(E - 1)) % E;
                float wa = 0.1f + (float) random.nextDouble();
                topk.addExpertIds(a).addExpertIds(c).addWeights(wa).addWeights(1 - wa / 2);
            }
            b.setTopk(topk);
        } else if (routing == Routing.LOGITS) {
            float[] logits = new float[tokens * E];
            for (int i = 0; i < logits.length; i++) {
                logits[i] = (float) random.nextGaussian() * 2;
            }
            b.setRouterLogits(TensorCodec.tensor(DType.FP32, tokens, E, logits));
        }
        return b.build();
    }

    private static Arguments bad(
            String what, UnaryOperator<ForwardRequest.Builder> breakIt, String message) {
        return Arguments.of(what, breakIt, message);
    }

    private static float[] nanAt(int length, int index) {
        float[] v = new float[length];
        v[index] = Float.NaN;
        return v;
    }

    private static List<Long> boxed(long[] values) {
        List<Long> out = new ArrayList<>();
        for (long v : values) {
            out.add(v);
        }
        return out;
    }

    private static MoeServer.Settings settings() {
        return new MoeServer.Settings(64, 256, 1 << 20, MAX_REQUEST_BYTES, 2, 0, 0);
    }

    private EmbeddedCluster cluster() {
        return new EmbeddedCluster(model, weights, PLACEMENT, TimeUnit.SECONDS.toNanos(10));
    }

    /** 3 slots per rank, planned for random loads. */
    static Placement replicatedPlacement(SplittableRandom random, long version) {
        double[] loads = new double[E];
        for (int e = 0; e < E; e++) {
            loads[e] = random.nextDouble(1, 100);
        }
        return PlacementPlanner.plan(loads, N, N * 3, 1, 1).placement(version, E, N);
    }

    private static boolean hosts(int expert, int rank) {
        for (int i = 0; i < PLACEMENT.replicas(expert); i++) {
            if (PLACEMENT.replicaRank(expert, i) == rank) {
                return true;
            }
        }
        return false;
    }
}
