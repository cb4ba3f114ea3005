package moe.a2a.control.grpc;

import static moe.a2a.control.grpc.MoeGrpcServiceTest.E;
import static moe.a2a.control.grpc.MoeGrpcServiceTest.H;
import static moe.a2a.control.grpc.MoeGrpcServiceTest.I;
import static moe.a2a.control.grpc.MoeGrpcServiceTest.K;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import moe.a2a.comm.Transport;
import moe.a2a.comm.local.LocalTransportProvider;
import moe.a2a.control.cluster.EmbeddedCluster;
import moe.a2a.control.cluster.LayerPlacements;
import moe.a2a.control.cluster.RankGroup;
import moe.a2a.control.cluster.Rebalancer;
import moe.a2a.control.cluster.StepScheduler;
import moe.a2a.control.grpc.MoeGrpcServiceTest.Routing;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankStepResult;
import moe.a2a.experts.RoutingInput;
import moe.a2a.experts.SeededWeights;
import moe.a2a.experts.task.RankTask;
import moe.a2a.kernels.DType;
import moe.a2a.metrics.StepMetrics;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A step that runs out of memory with several requests in it: each runs again in a step of its own,
 * so the ones that fit are answered right and only the one too big fails RESOURCE_EXHAUSTED.
 */
@Timeout(60)
class OutOfMemoryBatchTest {
    /** Steps of more tokens than this run out of direct memory on the ranks. */
    static final int MEMORY_TOKENS = 40;

    final SeededWeights weights = new SeededWeights(9, E, H, I, 1);
    final ModelConfig model = new ModelConfig(E, H, I, K, 1);
    final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    final StepMetrics metrics =
            new StepMetrics(registry, new int[] {0}, E, 4, LocalTransportProvider.LOCAL);
    final SmallMemory cluster =
            new SmallMemory(new EmbeddedCluster(model, weights, 4, TimeUnit.SECONDS.toNanos(10)));
    final ClusterWatch watch = new ClusterWatch(cluster::describe);
    final StepScheduler scheduler =
            new StepScheduler(
                    cluster,
                    256,
                    16,
                    1 << 20,
                    2,
                    0,
                    metrics,
                    new Rebalancer(cluster, 0, metrics),
                    null);
    final MoeGrpcService service = new MoeGrpcService(weights, cluster, scheduler, watch, 0);

    @AfterEach
    void stop() {
        watch.close();
        scheduler.close();
        cluster.close();
    }

    @Test
    void shouldAnswerTheRequestsThatFitWhenTheirBatchRunsOutOfMemory() throws Exception {
        SplittableRandom random = new SplittableRandom(17);
        int[] tokens = {7, 12, 48, 5, 9};
        List<ForwardRequest> requests = new ArrayList<>();
        for (int t : tokens) {
            requests.add(MoeGrpcServiceTest.request(random, 0, t, DType.FP32, Routing.TOPK));
        }
        CompletableFuture<Void> held = new CompletableFuture<>();
        scheduler.runBetweenSteps(() -> held);
        List<CompletableFuture<ForwardResponse>> answers = new ArrayList<>();
        for (ForwardRequest request : requests) {
            CompletableFuture<ForwardResponse> answer = new CompletableFuture<>();
            service.forward(request, observer(answer));
            answers.add(answer);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (scheduler.queuedRequests() < requests.size() && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertThat(scheduler.queuedRequests()).as("queued behind the held scheduler").isEqualTo(5);
        held.complete(null);

        ReferenceAnswers reference = new ReferenceAnswers(weights, K);
        for (int i = 0; i < requests.size(); i++) {
            if (tokens[i] > MEMORY_TOKENS) {
                Status status = Status.fromThrowable(failure(answers.get(i)));
                assertThat(status.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(status.getDescription())
                        .startsWith("out of memory for this request's step (Cannot reserve");
            } else {
                reference.assertMatches(
                        "request " + i, requests.get(i), answers.get(i).get(10, TimeUnit.SECONDS));
            }
        }
        assertThat(cluster.steps)
                .as("tokens of each step: the batch, then each of its requests alone")
                .containsExactlyElementsOf(
                        List.of(
                                IntStream.of(tokens).sum(),
                                tokens[0],
                                tokens[1],
                                tokens[2],
                                tokens[3],
                                tokens[4]));
    }

    private static Throwable failure(CompletableFuture<ForwardResponse> answer) throws Exception {
        try {
            answer.get(10, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        }
        throw new AssertionError("answered, though too big for memory");
    }

    private static StreamObserver<ForwardResponse> observer(
            CompletableFuture<ForwardResponse> answer) {
        return new StreamObserver<>() {
            @Override
            public void onNext(ForwardResponse value) {
                answer.complete(value);
            }

            @Override
            public void onError(Throwable t) {
                answer.completeExceptionally(t);
            }

            @Override
            public void onCompleted() {
                answer.completeExceptionally(new AssertionError("completed without an answer"));
            }
        };
    }

    /**
     * An in-process cluster whose steps of more than {@link #MEMORY_TOKENS} tokens fail as their
     * ranks' direct memory running out would; it records each step's tokens.
     */
    private static final class SmallMemory implements RankGroup {
        final RankGroup inner;
        final List<Integer> steps = new CopyOnWriteArrayList<>();

        SmallMemory(RankGroup inner) {
            this.inner = inner;
        }

        @Override
        public CompletableFuture<RankStepResult[]> submit(
                int layer,
                DType dtype,
                ByteBuffer[] tokens,
                int[] counts,
                RoutingInput[] routing,
                int[] capacities,
                int lowLatencyTokens) {
            int total = IntStream.of(counts).sum();
            steps.add(total);
            if (total > MEMORY_TOKENS) {
                return CompletableFuture.failedFuture(
                        new OutOfMemoryError(
                                "Cannot reserve "
                                        + total * H * 4
                                        + " bytes of direct buffer memory"));
            }
            return inner.submit(
                    layer, dtype, tokens, counts, routing, capacities, lowLatencyTokens);
        }

        @Override
        public ModelConfig model() {
            return inner.model();
        }

        @Override
        public LayerPlacements placements() {
            return inner.placements();
        }

        @Override
        public CompletableFuture<Long> stage(int layer, Placement next) {
            return inner.stage(layer, next);
        }

        @Override
        public void activate(int layer, Placement next) {
            inner.activate(layer, next);
        }

        @Override
        public int worldSize() {
            return inner.worldSize();
        }

        @Override
        public int joined() {
            return inner.joined();
        }

        @Override
        public int healthy() {
            return inner.healthy();
        }

        @Override
        public int rebuilds() {
            return inner.rebuilds();
        }

        @Override
        public int[] servingRanks() {
            return inner.servingRanks();
        }

        @Override
        public int degradedRanks() {
            return inner.degradedRanks();
        }

        @Override
        public Transport transport() {
            return inner.transport();
        }

        @Override
        public void recordRouting() {
            inner.recordRouting();
        }

        @Override
        public CompletableFuture<List<byte[]>> onEveryRank(RankTask task) {
            return inner.onEveryRank(task);
        }

        @Override
        public void close() {
            inner.close();
        }
    }
}
