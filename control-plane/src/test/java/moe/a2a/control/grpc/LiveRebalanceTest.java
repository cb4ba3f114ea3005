package moe.a2a.control.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.control.cluster.EmbeddedCluster;
import moe.a2a.control.cluster.FirstPlacement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import moe.a2a.metrics.Imbalance;
import moe.a2a.protocol.TensorCodec;
import moe.a2a.v1.DescribeModelRequest;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import moe.a2a.v1.ModelInfo;
import moe.a2a.v1.MoeServiceGrpc;
import moe.a2a.v1.TopK;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Live rebalancing in the in-process cluster: skewed traffic on one layer moves its experts while
 * every answer stays the reference's, and the other layer keeps its placement.
 */
@Timeout(120)
class LiveRebalanceTest {
    static final int E = 8;
    static final int H = 32;
    static final int I = 48;
    static final int K = 2;
    static final int N = 4;
    static final int REDUNDANT = 4;
    static final int EVERY = 4;

    final SeededWeights weights = new SeededWeights(17, E, H, I, 2);
    final ReferenceAnswers answers = new ReferenceAnswers(weights, K);
    InProcessMoeServer fixture;
    MoeServiceGrpc.MoeServiceBlockingStub stub;
    SimpleMeterRegistry registry;

    @BeforeEach
    void start() throws Exception {
        fixture =
                new InProcessMoeServer(
                        new EmbeddedCluster(
                                new ModelConfig(E, H, I, K, 2),
                                weights,
                                FirstPlacement.decide(E, N, REDUNDANT),
                                TimeUnit.SECONDS.toNanos(10)),
                        weights,
                        new MoeServer.Settings(256, 64, 1 << 20, 1 << 20, 2, EVERY, 0));
        stub = fixture.stub;
        registry = fixture.registry;
    }

    @AfterEach
    void stop() throws Exception {
        fixture.close();
    }

    @Test
    void shouldMoveHotExpertsAndAnswerRightThroughout() {
        ForwardRequest probe = skewed(new SplittableRandom(1000), 64);
        ForwardResponse before = stub.forward(probe);
        answers.assertMatches("probe before", probe, before);
        assertThat(before.getStats().getPlacementVersion()).isEqualTo(1);

        long newest = 1;
        for (int i = 0; i < 60 && newest == 1; i++) {
            ForwardRequest request = skewed(new SplittableRandom(i), 48);
            ForwardResponse response = stub.forward(request);
            answers.assertMatches("request " + i, request, response);
            newest = response.getStats().getPlacementVersion();
        }
        assertThat(newest).as("a step ran with a rebalanced placement").isGreaterThan(1);

        ForwardResponse after = stub.forward(probe);
        answers.assertMatches("probe after", probe, after);
        assertThat(rankImbalance(after))
                .as("the probe's tokens spread more evenly over the ranks")
                .isLessThan(rankImbalance(before));

        ModelInfo info = stub.describeModel(DescribeModelRequest.getDefaultInstance());
        assertThat(info.getPlacementVersions(0)).isGreaterThan(1);
        assertThat(info.getPlacementVersions(1)).as("layer 1 had no traffic").isEqualTo(1);
        assertThat(info.getPlacementVersion()).isEqualTo(info.getPlacementVersions(0));
        assertThat(registry.get("moe.a2a.rebalances").tag("layer", "0").counter().count())
                .isGreaterThanOrEqualTo(1);
        assertThat(registry.get("moe.a2a.rebalance.moved").tag("layer", "0").counter().count())
                .as("weights of experts a rank did not host were loaded")
                .isPositive();
        assertThat(registry.get("moe.a2a.rebalances").tag("layer", "1").counter().count()).isZero();
    }

    private static double rankImbalance(ForwardResponse response) {
        return Imbalance.maxOverMean(
                response.getStats().getTokensPerRankList().stream()
                        .mapToLong(Long::longValue)
                        .toArray());
    }

    /**
     * Layer 0 tokens whose first expert is 6 half the time and 7 a quarter of it (experts the first
     * placement gives no replica), the second one uniform.
     */
    private static ForwardRequest skewed(SplittableRandom random, int tokens) {
        ByteBuffer data = ByteBuffer.allocate(tokens * H * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < tokens * H; i++) {
            DType.BF16.put(data, i * 2, (float) random.nextGaussian());
        }
        TopK.Builder topk = TopK.newBuilder().setK(K);
        for (int t = 0; t < tokens; t++) {
            double u = random.nextDouble();
            int a = u < 0.5 ? 6 : u < 0.75 ? 7 : random.nextInt(E);
            int b = (a + 1 + random.nextInt(E - 1)) % E;
            float wa = 0.2f + 0.6f * (float) random.nextDouble();
            topk.addExpertIds(a).addExpertIds(b).addWeights(wa).addWeights(1 - wa);
        }
        return ForwardRequest.newBuilder()
                .setLayer(0)
                .setHiddenStates(
                        TensorCodec.tensor(
                                DType.BF16, tokens, H, ByteString.copyFrom(data.array())))
                .setTopk(topk)
                .build();
    }
}
