package moe.a2a.control.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.control.cluster.EmbeddedCluster;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import moe.a2a.v1.ForwardRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The admission queue is bounded in tokens too: a request that does not fit is refused at once. */
@Timeout(60)
class AdmissionQueueTest {

    @Test
    void shouldRefuseARequestWhoseTokensDoNotFitAndServeTheNext() throws Exception {
        SeededWeights weights = new SeededWeights(7, 8, 32, 48, 2);
        try (InProcessMoeServer fixture =
                new InProcessMoeServer(
                        new EmbeddedCluster(
                                new ModelConfig(8, 32, 48, 2, 2),
                                weights,
                                4,
                                TimeUnit.SECONDS.toNanos(10)),
                        weights,
                        new MoeServer.Settings(64, 64, 10, 1 << 20, 2, 0, 0))) {
            ForwardRequest big =
                    MoeGrpcServiceTest.request(
                            new SplittableRandom(1),
                            0,
                            12,
                            DType.FP32,
                            MoeGrpcServiceTest.Routing.TOPK);
            assertThatThrownBy(() -> fixture.stub.forward(big))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> {
                                assertThat(e.getStatus().getCode())
                                        .isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                                assertThat(e.getStatus().getDescription())
                                        .isEqualTo(
                                                "request queue full: tokens=10 queued, this"
                                                        + " request's 12 do not fit (retry later)");
                            });
            ForwardRequest fits =
                    MoeGrpcServiceTest.request(
                            new SplittableRandom(2),
                            1,
                            8,
                            DType.FP32,
                            MoeGrpcServiceTest.Routing.TOPK);
            new ReferenceAnswers(weights, 2)
                    .assertMatches("fits", fits, fixture.stub.forward(fits));
            assertThat(fixture.registry.get("moe.a2a.queue.tokens").gauge().value()).isZero();
            assertThat(fixture.registry.get("moe.a2a.queue").gauge().value()).isZero();
        }
    }
}
