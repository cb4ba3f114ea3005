package moe.a2a.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyServerBuilder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import moe.a2a.control.cluster.EmbeddedCluster;
import moe.a2a.control.grpc.MoeServer;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.SeededWeights;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import moe.a2a.v1.ModelInfo;
import moe.a2a.v1.RouteRequest;
import moe.a2a.v1.RouteResponse;
import moe.a2a.v1.Tensor;
import moe.a2a.v1.TopK;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Both clients against a real server on a TCP port (4 in-process ranks), every answer checked
 * against the single-process reference layer of the same seeded weights.
 */
@Timeout(120)
class MoeClientTest {
    static final int E = 8;
    static final int H = 32;
    static final int I = 48;
    static final int K = 2;
    static final SeededWeights WEIGHTS = new SeededWeights(5, E, H, I, 1);
    static final ReferenceMoeLayer REFERENCE = new ReferenceMoeLayer(WEIGHTS);
    static MoeServer server;
    static String target;

    @BeforeAll
    static void start() throws Exception {
        server =
                MoeServer.start(
                        NettyServerBuilder.forPort(0),
                        new EmbeddedCluster(
                                new ModelConfig(E, H, I, K, 1),
                                WEIGHTS,
                                4,
                                TimeUnit.SECONDS.toNanos(10)),
                        WEIGHTS,
                        new MoeServer.Settings(8192, 64, 1 << 20, 1 << 24, 2, 0, 0),
                        new SimpleMeterRegistry(),
                        true);
        target = "127.0.0.1:" + server.port();
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    record Case(float[] x, int tokens, int[] ids, float[] w) {
        Tensor fp32() {
            return Tensors.fp32(x, tokens, H);
        }

        TopK topK() {
            return Tensors.topK(ids, w, K);
        }

        float[] expected() {
            return REFERENCE.forward(0, x, tokens, K, ids, w);
        }
    }

    static Case random(SplittableRandom rnd, int tokens) {
        float[] x = new float[tokens * H];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) rnd.nextGaussian();
        }
        int[] ids = new int[tokens * K];
        float[] w = new float[tokens * K];
        for (int t = 0; t < tokens; t++) {
            ids[t * K] = rnd.nextInt(E);
            ids[t * K + 1] = (ids[t * K] + 1 + rnd.nextInt(E - 1)) % E;
            w[t * K] = 0.2f + (float) rnd.nextDouble();
            w[t * K + 1] = 0.1f + (float) rnd.nextDouble();
        }
        return new Case(x, tokens, ids, w);
    }

    /** Every row within {@code rel} of its largest element. */
    static void assertClose(String where, float[] got, float[] want, double rel) {
        assertThat(got).as(where).hasSize(want.length);
        for (int row = 0; row < want.length / H; row++) {
            double scale = 1e-6;
            for (int c = 0; c < H; c++) {
                scale = Math.max(scale, Math.abs(want[row * H + c]));
            }
            for (int c = 0; c < H; c++) {
                int i = row * H + c;
                assertThat((double) Math.abs(got[i] - want[i]))
                        .as("%s, row %d, column %d", where, row, c)
                        .isLessThanOrEqualTo(rel * scale);
            }
        }
    }

    @Test
    void blockingCallsShouldAnswerAsTheReference() {
        SplittableRandom rnd = new SplittableRandom(1);
        try (MoeClient client =
                MoeClients.builder(target).deadline(Duration.ofSeconds(30)).blocking()) {
            ModelInfo info = client.describeModel();
            assertThat(info.getExperts()).isEqualTo(E);
            assertThat(info.getHidden()).isEqualTo(H);
            Case c = random(rnd, 9);
            ForwardResponse r = client.forward(0, c.fp32(), c.topK());
            assertClose("fp32", Tensors.floats(r.getHiddenStates()), c.expected(), 1e-4);

            short[] bits = new short[c.x().length];
            float[] rounded = new float[bits.length];
            for (int i = 0; i < bits.length; i++) {
                bits[i] = Tensors.toBf16(c.x()[i]);
                rounded[i] = Tensors.fromBf16(bits[i]);
            }
            ForwardResponse bf16 = client.forward(0, Tensors.bf16(bits, 9, H), c.topK());
            assertThat(bf16.getHiddenStates().getDtype()).isEqualTo(moe.a2a.v1.DType.BF16);
            float[] want = REFERENCE.forward(0, rounded, 9, K, c.ids(), c.w());
            assertClose("bf16", Tensors.floats(bf16.getHiddenStates()), want, 1e-2);

            RouteResponse route =
                    client.route(RouteRequest.newBuilder().setLayer(0).setTopk(c.topK()).build());
            assertThat(route.getExpertIdsList()).hasSize(9 * K);

            List<ForwardRequest> many = new ArrayList<>();
            List<Case> cases = new ArrayList<>();
            for (int t : new int[] {3, 1, 7}) {
                Case one = random(rnd, t);
                cases.add(one);
                many.add(
                        ForwardRequest.newBuilder()
                                .setHiddenStates(one.fp32())
                                .setTopk(one.topK())
                                .build());
            }
            List<ForwardResponse> answers = client.forwardAll(many);
            for (int i = 0; i < cases.size(); i++) {
                assertClose(
                        "stream " + i,
                        Tensors.floats(answers.get(i).getHiddenStates()),
                        cases.get(i).expected(),
                        1e-4);
            }
        }
    }

    @Test
    void asyncCallsShouldAnswerAsTheReferenceAndFailWithTheServersStatus() throws Exception {
        SplittableRandom rnd = new SplittableRandom(2);
        try (MoeAsyncClient client = MoeClients.builder(target).async()) {
            Case c = random(rnd, 5);
            ForwardResponse r = client.forward(0, c.fp32(), c.topK()).get(30, TimeUnit.SECONDS);
            assertClose("async", Tensors.floats(r.getHiddenStates()), c.expected(), 1e-4);
            assertThatThrownBy(
                            () -> client.forward(3, c.fp32(), c.topK()).get(30, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause()
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> {
                                assertThat(e.getStatus().getCode())
                                        .isEqualTo(Status.Code.INVALID_ARGUMENT);
                                assertThat(e.getStatus().getDescription()).contains("layer");
                            });
        }
    }
}
