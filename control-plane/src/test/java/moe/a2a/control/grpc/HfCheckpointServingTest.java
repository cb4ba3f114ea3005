package moe.a2a.control.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import com.google.protobuf.ByteString;
import io.grpc.StatusRuntimeException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.control.cluster.EmbeddedCluster;
import moe.a2a.control.cluster.FirstPlacement;
import moe.a2a.dispatch.Gate;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.hf.HfCheckpoint;
import moe.a2a.experts.hf.TinyCheckpoints;
import moe.a2a.kernels.DType;
import moe.a2a.protocol.TensorCodec;
import moe.a2a.v1.DescribeModelRequest;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import moe.a2a.v1.ModelInfo;
import moe.a2a.v1.RouteRequest;
import moe.a2a.v1.RouteResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A DeepSeek-V3 checkpoint (FP8 experts and a shared expert in shards, sigmoid group-limited gate
 * with bias) served in-process: Forward and Route through the model's gate, every MoE layer,
 * against the reference (routed experts plus the shared one).
 */
@Timeout(60)
class HfCheckpointServingTest {
    static final int E = 8;
    static final int H = 32;
    static final int I = 24;

    @TempDir Path dir;

    @Test
    void shouldServeEveryMoeLayerThroughTheModelsGate() throws Exception {
        TinyCheckpoints.deepSeekV3(dir, 3, H, I, E, 1, 2, 5);
        try (HfCheckpoint weights = HfCheckpoint.open(dir);
                InProcessMoeServer fixture =
                        new InProcessMoeServer(
                                new EmbeddedCluster(
                                        new ModelConfig(E, H, I, 2, weights.layers()),
                                        weights,
                                        FirstPlacement.decide(E, 4, 4),
                                        TimeUnit.SECONDS.toNanos(10)),
                                weights,
                                new MoeServer.Settings(256, 64, 1 << 20, 1 << 20, 2, 0, 0))) {
            ModelInfo info = fixture.stub.describeModel(DescribeModelRequest.getDefaultInstance());
            assertThat(info.getArchitecture()).isEqualTo("DeepseekV3ForCausalLM");
            assertThat(info.getGate())
                    .isEqualTo("sigmoid top-k, 2 groups keep 1, renormalised, x2.5");
            assertThat(info.getMoeLayersList()).containsExactly(1, 2);
            assertThat(info.getWeightFormat()).isEqualTo("F8_E4M3 (8x8 block scales)");

            ReferenceAnswers answers = new ReferenceAnswers(weights, 2);
            ReferenceMoeLayer reference = new ReferenceMoeLayer(weights);
            // requests name the model's own layer (1, 2); the reference counts MoE layers (0, 1)
            for (int layer = 0; layer < 2; layer++) {
                ForwardRequest request = tokens(new SplittableRandom(layer), layer + 1, 21);
                float[] x = TensorCodec.floats(request.getHiddenStates());
                float[] logits = reference.gateLogits(layer, x, 21);
                int[] ids = new int[21 * 2];
                float[] w = new float[21 * 2];
                Gate.route(weights.gateSpec(), logits, 21, E, 2, weights.gateBias(layer), ids, w);

                ForwardResponse response = fixture.stub.forward(request);
                answers.assertMatches("layer " + layer, request, response, ids, w);

                RouteResponse route =
                        fixture.stub.route(
                                RouteRequest.newBuilder()
                                        .setLayer(layer + 1)
                                        .setHiddenStates(request.getHiddenStates())
                                        .build());
                for (int i = 0; i < ids.length; i++) {
                    assertThat(route.getExpertIds(i))
                            .as("layer %d pair %d", layer, i)
                            .isEqualTo(ids[i]);
                    // the server's logits come from BLAS, the reference's from plain loops
                    assertThat(route.getWeights(i)).isCloseTo(w[i], within(1e-5f));
                }
            }
            ForwardRequest dense = tokens(new SplittableRandom(9), 0, 3);
            assertThatThrownBy(() -> fixture.stub.forward(dense))
                    .isInstanceOf(StatusRuntimeException.class)
                    .hasMessage(
                            "INVALID_ARGUMENT: layer: 0 (expected: one of the model's MoE layers"
                                    + " [1, 2]; layer 0 is dense)");
        }
    }

    private static ForwardRequest tokens(SplittableRandom random, int layer, int n) {
        ByteBuffer data = ByteBuffer.allocate(n * H * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < n * H; i++) {
            data.putFloat(i * 4, (float) random.nextGaussian());
        }
        return ForwardRequest.newBuilder()
                .setLayer(layer)
                .setHiddenStates(
                        TensorCodec.tensor(DType.FP32, n, H, ByteString.copyFrom(data.array())))
                .build();
    }
}
