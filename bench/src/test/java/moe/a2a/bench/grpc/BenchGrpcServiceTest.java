package moe.a2a.bench.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.control.cluster.EmbeddedCluster;
import moe.a2a.control.grpc.MoeServer;
import moe.a2a.experts.LayerCheck;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import moe.a2a.protocol.TensorCodec;
import moe.a2a.v1.BenchEvent;
import moe.a2a.v1.BenchRequest;
import moe.a2a.v1.BenchServiceGrpc;
import moe.a2a.v1.CollectiveBenchRequest;
import moe.a2a.v1.CollectiveBenchResult;
import moe.a2a.v1.CollectiveRankTimes;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import moe.a2a.v1.MoeServiceGrpc;
import moe.a2a.v1.TopK;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * BenchService on a live two-rank embedded server: progress, validated results, skips, errors;
 * collective cases on the in-process ranks.
 */
@Timeout(120)
class BenchGrpcServiceTest {
    final SeededWeights weights = new SeededWeights(3, 4, 16, 16, 1);
    MoeServer server;
    ManagedChannel channel;

    @BeforeEach
    void start() throws Exception {
        String name = InProcessServerBuilder.generateName();
        EmbeddedCluster cluster =
                new EmbeddedCluster(
                        new ModelConfig(4, 16, 16, 2, 1), weights, 2, TimeUnit.SECONDS.toNanos(30));
        server =
                MoeServer.start(
                        InProcessServerBuilder.forName(name),
                        cluster,
                        weights,
                        new MoeServer.Settings(64, 64, 1 << 20, 1 << 20, 2, 0, 0),
                        new SimpleMeterRegistry(),
                        true,
                        List.of(BenchGrpcService::new));
        channel = InProcessChannelBuilder.forName(name).build();
    }

    @AfterEach
    void stop() throws Exception {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        server.close();
    }

    @Test
    void shouldRunMatchingWorkloadsAndSkipOthersBetweenSteps() {
        List<BenchEvent> events = new ArrayList<>();
        BenchServiceGrpc.newBlockingStub(channel)
                .run(
                        BenchRequest.newBuilder()
                                .addWorkloads("prefill-n2")
                                .addWorkloads("decode")
                                .setIters(2)
                                .setWarmup(1)
                                .build())
                .forEachRemaining(events::add);

        assertThat(events).hasSize(4);
        assertThat(events.get(0).getProgress().getWorkload()).isEqualTo("prefill-n2");
        assertThat(events.get(0).getProgress().getTotal()).isEqualTo(2);
        var ran = events.get(1).getResult();
        assertThat(ran.getRan()).isTrue();
        assertThat(ran.getOk()).as("validated on every rank").isTrue();
        assertThat(ran.getFingerprint()).isEqualTo("2ca54de00fb4645e");
        assertThat(ran.getTransport()).isEqualTo("local");
        assertThat(ran.getTotalUsP50()).isPositive();
        assertThat(ran.getJson()).contains("\"workload\":\"prefill-n2\"").contains("\"ok\":true");
        var skipped = events.get(3).getResult();
        assertThat(skipped.getRan()).isFalse();
        assertThat(skipped.getReason()).isEqualTo("needs 4 ranks; this cluster has 2");

        // serving goes on afterwards, with the reference answer
        SplittableRandom random = new SplittableRandom(1);
        int tokens = 6;
        float[] x = new float[tokens * 16];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) random.nextGaussian();
        }
        TopK.Builder topk = TopK.newBuilder().setK(2);
        int[] ids = new int[tokens * 2];
        float[] w = new float[tokens * 2];
        for (int t = 0; t < tokens; t++) {
            ids[2 * t] = t % 4;
            ids[2 * t + 1] = (t + 1) % 4;
            w[2 * t] = 0.25f;
            w[2 * t + 1] = 0.75f;
            topk.addExpertIds(ids[2 * t])
                    .addExpertIds(ids[2 * t + 1])
                    .addWeights(w[2 * t])
                    .addWeights(w[2 * t + 1]);
        }
        ForwardResponse response =
                MoeServiceGrpc.newBlockingStub(channel)
                        .forward(
                                ForwardRequest.newBuilder()
                                        .setHiddenStates(
                                                TensorCodec.tensor(DType.FP32, tokens, 16, x))
                                        .setTopk(topk)
                                        .build());
        float[] expected = new ReferenceMoeLayer(weights).forward(0, x, tokens, 2, ids, w);
        LayerCheck.assertClose(
                "after bench",
                DType.FP32,
                TensorCodec.floats(response.getHiddenStates()),
                expected,
                16);
    }

    @Test
    void shouldRejectUnknownWorkloadNamingIt() {
        assertThatThrownBy(
                        () ->
                                BenchServiceGrpc.newBlockingStub(channel)
                                        .run(
                                                BenchRequest.newBuilder()
                                                        .addWorkloads("prefill")
                                                        .addWorkloads("nope")
                                                        .build())
                                        .forEachRemaining(e -> {}))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode())
                                    .isEqualTo(Status.Code.INVALID_ARGUMENT);
                            assertThat(e.getStatus().getDescription())
                                    .contains("workloads[1]: nope");
                        });
    }

    @Test
    void shouldRunEveryCollectiveOnTheInProcessRanksWithNoWrongElements() {
        List<BenchEvent> events = new ArrayList<>();
        BenchServiceGrpc.newBlockingStub(channel)
                .run(
                        BenchRequest.newBuilder()
                                .setIters(3)
                                .setCollective(
                                        CollectiveBenchRequest.newBuilder()
                                                .addCollectives("allreduce")
                                                .addCollectives("allgather")
                                                .addCollectives("reducescatter")
                                                .addCollectives("broadcast")
                                                .addCollectives("alltoall")
                                                .addSizes(8)
                                                .addSizes(9)
                                                .addSizes(4096)
                                                .setDtype("bf16")
                                                .setOp("max")
                                                .setRoot(1)
                                                .setWarmup(0))
                                .build())
                .forEachRemaining(events::add);

        // 9 bytes of bf16 are 4 elements, as 8 bytes are: that size runs once per collective
        List<CollectiveBenchResult> results = new ArrayList<>();
        for (int i = 0; i < events.size(); i += 2) {
            assertThat(events.get(i).hasProgress()).isTrue();
            assertThat(events.get(i + 1).hasCollectiveResult()).isTrue();
            results.add(events.get(i + 1).getCollectiveResult());
            assertThat(events.get(i).getProgress().getWorkload())
                    .isEqualTo(results.get(results.size() - 1).getCollective());
        }
        assertThat(results).hasSize(10);
        assertThat(events.get(0).getProgress().getTotal()).isEqualTo(10);
        for (CollectiveBenchResult r : results) {
            assertThat(r.getTransport()).isEqualTo("local");
            assertThat(r.getRanks()).isEqualTo(2);
            assertThat(r.getDtype()).isEqualTo("bf16");
            assertThat(r.getOp()).isEqualTo("max");
            assertThat(r.getRoot()).isEqualTo(1);
            assertThat(r.getLinkGbps()).as("memcpy measured for in-process ranks").isPositive();
            assertThat(r.getRanksTimesList()).hasSize(2);
            for (CollectiveRankTimes t : r.getRanksTimesList()) {
                assertThat(t.getNsList()).hasSize(3).allMatch(ns -> ns > 0);
                assertThat(t.getWrong()).as(r.toString()).isZero();
            }
            assertThat(r.getJson()).contains("\"wrong\":0").contains("\"ranks\":2");
        }
    }

    @Test
    void shouldRejectACollectiveRequestNamingTheField() {
        CollectiveBenchRequest.Builder broadcast =
                CollectiveBenchRequest.newBuilder().addCollectives("broadcast").addSizes(64);
        assertInvalid(
                BenchRequest.newBuilder().setCollective(broadcast.clone().setRoot(2)).build(),
                "collective.root: 2 (expected: in [0, 2)");
        assertInvalid(
                BenchRequest.newBuilder()
                        .setCollective(broadcast.clone().addCollectives("gossip"))
                        .build(),
                "collective.collectives[1]: gossip (expected: one of allreduce");
        assertInvalid(
                BenchRequest.newBuilder()
                        .setCollective(broadcast.clone().addSizes(2L << 30))
                        .build(),
                "collective.sizes[1]: 2147483648 (expected: 1 to 1073741824)");
        assertInvalid(
                BenchRequest.newBuilder().setCollective(broadcast.clone().setDtype("int8")).build(),
                "collective.dtype: int8 (expected: one of bf16, fp16, fp32)");
        assertInvalid(
                BenchRequest.newBuilder()
                        .addWorkloads("decode")
                        .setCollective(broadcast.clone())
                        .build(),
                "workloads, scope: not with collective");
    }

    private void assertInvalid(BenchRequest request, String description) {
        assertThatThrownBy(
                        () ->
                                BenchServiceGrpc.newBlockingStub(channel)
                                        .run(request)
                                        .forEachRemaining(e -> {}))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode())
                                    .isEqualTo(Status.Code.INVALID_ARGUMENT);
                            assertThat(e.getStatus().getDescription()).contains(description);
                        });
    }
}
