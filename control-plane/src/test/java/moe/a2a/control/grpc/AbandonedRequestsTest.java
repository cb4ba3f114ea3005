package moe.a2a.control.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import moe.a2a.comm.local.LocalTransportProvider;
import moe.a2a.control.cluster.EmbeddedCluster;
import moe.a2a.control.cluster.ForwardJob;
import moe.a2a.control.cluster.ForwardOutcome;
import moe.a2a.control.cluster.Rebalancer;
import moe.a2a.control.cluster.StepScheduler;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RoutingInput;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import moe.a2a.metrics.StepMetrics;
import moe.a2a.protocol.TensorCodec;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.RouteRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Requests whose caller gave up never take a step: refused on arrival before routing, or dropped
 * from the queue, answered DEADLINE_EXCEEDED or CANCELLED and counted; the others are unaffected.
 */
@Timeout(60)
class AbandonedRequestsTest {
    static final int E = 8;
    static final int H = 32;
    static final int K = 2;

    final SeededWeights weights = new SeededWeights(3, E, H, 48, 1);
    final ModelConfig model = new ModelConfig(E, H, 48, K, 1);
    final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    final StepMetrics metrics =
            new StepMetrics(registry, new int[] {0}, E, 4, LocalTransportProvider.LOCAL);
    final EmbeddedCluster cluster =
            new EmbeddedCluster(model, weights, 4, TimeUnit.SECONDS.toNanos(10));
    final ClusterWatch watch = new ClusterWatch(cluster::describe);
    final StepScheduler scheduler =
            new StepScheduler(
                    cluster,
                    64,
                    16,
                    1 << 20,
                    1,
                    0,
                    metrics,
                    new Rebalancer(cluster, 0, metrics),
                    null);
    final MoeGrpcService service = new MoeGrpcService(weights, cluster, scheduler, watch, 0);
    final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();

    @AfterEach
    void stop() {
        watch.close();
        scheduler.close();
        cluster.close();
        timer.shutdownNow();
    }

    @Test
    void shouldRefuseBeforeRoutingWhenTheCallerAlreadyGaveUp() throws Exception {
        ForwardRequest request = request(new SplittableRandom(1), 5);
        Context.CancellableContext cancelled = Context.current().withCancellation();
        cancelled.cancel(null);
        assertThat(forward(cancelled, request).getCode()).isEqualTo(Status.Code.CANCELLED);

        Context.CancellableContext expired =
                Context.current().withDeadline(Deadline.after(-1, TimeUnit.SECONDS), timer);
        assertThat(forward(expired, request).getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
        CompletableFuture<Status> route = new CompletableFuture<>();
        expired.run(
                () ->
                        service.route(
                                RouteRequest.newBuilder()
                                        .setHiddenStates(request.getHiddenStates())
                                        .setTopk(request.getTopk())
                                        .build(),
                                observer(route)));
        assertThat(route.get(5, TimeUnit.SECONDS).getCode())
                .isEqualTo(Status.Code.DEADLINE_EXCEEDED);

        assertThat(routedPairs()).as("nothing was routed").isZero();
    }

    @Test
    void shouldDropAbandonedJobsFromTheQueueAndAnswerTheOthers() throws Exception {
        CompletableFuture<ForwardOutcome> kept = new CompletableFuture<>();
        CompletableFuture<ForwardOutcome> dropped = new CompletableFuture<>();
        CompletableFuture<ForwardOutcome> after = new CompletableFuture<>();
        RuntimeException gone =
                Status.DEADLINE_EXCEEDED.withDescription("test deadline").asRuntimeException();
        scheduler.submit(job(new SplittableRandom(2), 7, () -> null, kept));
        scheduler.submit(job(new SplittableRandom(3), 9, () -> gone, dropped));
        scheduler.submit(job(new SplittableRandom(4), 4, () -> null, after));

        assertThat(kept.get(10, TimeUnit.SECONDS).output().size()).isEqualTo(7 * H * 4);
        assertThat(after.get(10, TimeUnit.SECONDS).output().size()).isEqualTo(4 * H * 4);
        try {
            dropped.join();
            throw new AssertionError("the abandoned job was answered");
        } catch (CompletionException e) {
            assertThat(e.getCause()).isSameAs(gone);
        }
        assertThat(registry.get("moe.a2a.abandoned").counter().count()).isEqualTo(1);
        // the step meters are recorded just after the answers
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (routedPairs() != (7 + 4) * K && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(routedPairs())
                .as("the dropped job's tokens never took a step")
                .isEqualTo((7 + 4) * K);
    }

    private Status forward(Context context, ForwardRequest request) throws Exception {
        CompletableFuture<Status> outcome = new CompletableFuture<>();
        context.run(() -> service.forward(request, observer(outcome)));
        return outcome.get(5, TimeUnit.SECONDS);
    }

    private static <T> StreamObserver<T> observer(CompletableFuture<Status> outcome) {
        return new StreamObserver<>() {
            @Override
            public void onNext(T value) {}

            @Override
            public void onError(Throwable t) {
                outcome.complete(Status.fromThrowable(t));
            }

            @Override
            public void onCompleted() {
                outcome.complete(Status.OK);
            }
        };
    }

    private double routedPairs() {
        double sum = 0;
        for (int e = 0; e < E; e++) {
            sum +=
                    registry.get("moe.a2a.expert.routed")
                            .tag("layer", "0")
                            .tag("expert", Integer.toString(e))
                            .counter()
                            .count();
        }
        return sum;
    }

    private static ForwardRequest request(SplittableRandom random, int tokens) {
        ForwardJob job = job(random, tokens, () -> null, new CompletableFuture<>());
        RoutingInput.TopK topk = (RoutingInput.TopK) job.routing();
        moe.a2a.v1.TopK.Builder b = moe.a2a.v1.TopK.newBuilder().setK(K);
        for (int i = 0; i < topk.ids().length; i++) {
            b.addExpertIds(topk.ids()[i]).addWeights(topk.weights()[i]);
        }
        return ForwardRequest.newBuilder()
                .setHiddenStates(TensorCodec.tensor(DType.FP32, tokens, H, job.tokens()))
                .setTopk(b)
                .build();
    }

    private static ForwardJob job(
            SplittableRandom random,
            int tokens,
            Supplier<RuntimeException> abandoned,
            CompletableFuture<ForwardOutcome> result) {
        ByteBuffer data = ByteBuffer.allocate(tokens * H * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < tokens * H; i++) {
            data.putFloat(i * 4, (float) random.nextGaussian());
        }
        int[] ids = new int[tokens * K];
        float[] w = new float[tokens * K];
        for (int t = 0; t < tokens; t++) {
            ids[t * K] = random.nextInt(E);
            ids[t * K + 1] = (ids[t * K] + 1 + random.nextInt(E - 1)) % E;
            w[t * K] = 0.5f;
            w[t * K + 1] = 0.5f;
        }
        return new ForwardJob(
                0,
                DType.FP32,
                tokens,
                ByteString.copyFrom(data.array()),
                new RoutingInput.TopK(ids, w),
                System.nanoTime(),
                abandoned,
                result);
    }
}
