package moe.a2a.control.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.local.LocalTransportProvider;
import moe.a2a.control.cluster.EmbeddedCluster;
import moe.a2a.control.cluster.Rebalancer;
import moe.a2a.control.cluster.StepScheduler;
import moe.a2a.control.grpc.MoeGrpcServiceTest.Routing;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import moe.a2a.metrics.StepMetrics;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import moe.a2a.v1.MoeServiceGrpc;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Calls meeting the queue (served with the admission gate, as MoeServer serves them).
 * ForwardStream: answers in the requests' order and equal to the reference, the first failure
 * ending the call and naming its request, and a cancelled stream's queued requests leaving the
 * queue at once while a step holds the ranks. The admission gate: a Forward call meeting a full
 * queue is refused at its headers, before its request arrives.
 */
@Timeout(60)
class StreamingAndAdmissionTest {
    static final int E = MoeGrpcServiceTest.E;
    static final int H = MoeGrpcServiceTest.H;
    static final int K = MoeGrpcServiceTest.K;

    final SeededWeights weights = new SeededWeights(5, E, H, MoeGrpcServiceTest.I, 1);
    final ModelConfig model = new ModelConfig(E, H, MoeGrpcServiceTest.I, K, 1);
    final ReferenceAnswers answers = new ReferenceAnswers(weights, K);
    final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    final StepMetrics metrics =
            new StepMetrics(registry, new int[] {0}, E, 4, LocalTransportProvider.LOCAL);
    final EmbeddedCluster cluster =
            new EmbeddedCluster(model, weights, 4, TimeUnit.SECONDS.toNanos(10));
    static final int QUEUE = 64;

    final ClusterWatch watch = new ClusterWatch(cluster::describe);
    final StepScheduler scheduler =
            new StepScheduler(
                    cluster,
                    64,
                    QUEUE,
                    1 << 20,
                    2,
                    0,
                    metrics,
                    new Rebalancer(cluster, 0, metrics),
                    null);
    Server server;
    ManagedChannel channel;

    @BeforeEach
    void start() throws Exception {
        String name = InProcessServerBuilder.generateName();
        server =
                InProcessServerBuilder.forName(name)
                        .addService(
                                AdmissionGate.serve(
                                        new MoeGrpcService(weights, cluster, scheduler, watch, 0),
                                        scheduler))
                        .build()
                        .start();
        channel = InProcessChannelBuilder.forName(name).build();
    }

    @AfterEach
    void stop() throws Exception {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        watch.close();
        scheduler.close();
        cluster.close();
    }

    @Test
    void shouldAnswerEveryRequestInOrder() throws Exception {
        SplittableRandom random = new SplittableRandom(31);
        List<ForwardRequest> requests = new ArrayList<>();
        for (int i = 0; i < 24; i++) {
            // sizes vary, so that requests land in different steps and finish out of order
            requests.add(
                    MoeGrpcServiceTest.request(
                            random, 0, 1 + random.nextInt(60), DType.BF16, Routing.TOPK));
        }
        Collected collected = stream(requests);
        assertThat(collected.ended.get(30, TimeUnit.SECONDS).getCode()).isEqualTo(Status.Code.OK);
        assertThat(collected.responses).hasSize(requests.size());
        for (int i = 0; i < requests.size(); i++) {
            answers.assertMatches("request " + i, requests.get(i), collected.responses.get(i));
        }
    }

    @Test
    void shouldEndAtTheFirstBadRequestNamingIt() throws Exception {
        SplittableRandom random = new SplittableRandom(32);
        List<ForwardRequest> requests = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            requests.add(MoeGrpcServiceTest.request(random, 0, 8, DType.FP32, Routing.TOPK));
        }
        requests.set(3, requests.get(3).toBuilder().setLayer(9).build());
        Collected collected = stream(requests);
        Status status = collected.ended.get(30, TimeUnit.SECONDS);
        assertThat(status.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(status.getDescription()).startsWith("request 3: layer: 9");
        assertThat(collected.responses).hasSize(3);
        for (int i = 0; i < 3; i++) {
            answers.assertMatches("request " + i, requests.get(i), collected.responses.get(i));
        }
    }

    @Test
    void shouldFreeTheQueueAtOnceWhenTheStreamIsCancelled() throws Exception {
        CompletableFuture<Void> ranksHeld = new CompletableFuture<>();
        CompletableFuture<Void> held = scheduler.runBetweenSteps(() -> ranksHeld);
        SplittableRandom random = new SplittableRandom(33);
        List<ForwardRequest> requests = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            requests.add(MoeGrpcServiceTest.request(random, 0, 16, DType.FP32, Routing.TOPK));
        }
        Collected collected = stream(requests, false);
        awaitQueued(10, 160);

        collected.call.cancel("test cancels", null);
        awaitQueued(0, 0);
        assertThat(held)
                .as("slots freed while the ranks are still held, not at the next step")
                .isNotDone();
        assertThat(registry.get("moe.a2a.abandoned").counter().count()).isEqualTo(10);

        ranksHeld.complete(null);
        ForwardRequest after = MoeGrpcServiceTest.request(random, 0, 12, DType.FP32, Routing.TOPK);
        answers.assertMatches(
                "after the cancel", after, MoeServiceGrpc.newBlockingStub(channel).forward(after));
    }

    @Test
    void shouldRefuseAtTheHeadersWhenTheQueueIsFull() throws Exception {
        CompletableFuture<Void> ranksHeld = new CompletableFuture<>();
        scheduler.runBetweenSteps(() -> ranksHeld);
        SplittableRandom random = new SplittableRandom(34);
        List<ForwardRequest> queued = new ArrayList<>();
        List<CompletableFuture<ForwardResponse>> answered = new ArrayList<>();
        for (int i = 0; i < QUEUE; i++) {
            queued.add(MoeGrpcServiceTest.request(random, 0, 1, DType.FP32, Routing.TOPK));
            answered.add(forwardAsync(queued.get(i)));
        }
        awaitQueued(QUEUE, QUEUE);

        // headers only: without the gate the server would wait for the request until the deadline
        CompletableFuture<Status> closed = new CompletableFuture<>();
        ClientCall<ForwardRequest, ForwardResponse> call =
                channel.newCall(
                        MoeServiceGrpc.getForwardMethod(),
                        CallOptions.DEFAULT.withDeadlineAfter(20, TimeUnit.SECONDS));
        call.start(
                new ClientCall.Listener<>() {
                    @Override
                    public void onClose(Status status, Metadata trailers) {
                        closed.complete(status);
                    }
                },
                new Metadata());
        call.request(1);
        Status refused = closed.get(30, TimeUnit.SECONDS);
        assertThat(refused.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertThat(refused.getDescription())
                .isEqualTo("request queue full: queued=64 (retry later)");

        ranksHeld.complete(null);
        for (int i = 0; i < QUEUE; i++) {
            answers.assertMatches(
                    "queued " + i, queued.get(i), answered.get(i).get(30, TimeUnit.SECONDS));
        }
    }

    @Test
    void shouldGiveASlotBackWhenItsCallEndsWithoutQueueingARequest() throws Exception {
        SplittableRandom random = new SplittableRandom(35);
        for (int i = 0; i < QUEUE + 10; i++) {
            ForwardRequest bad =
                    MoeGrpcServiceTest.request(random, 0, 4, DType.FP32, Routing.TOPK).toBuilder()
                            .setLayer(5)
                            .build();
            try {
                MoeServiceGrpc.newBlockingStub(channel).forward(bad);
                throw new AssertionError("a bad request was answered");
            } catch (io.grpc.StatusRuntimeException e) {
                assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
            }
        }
        // headers only, then cancelled: the slot taken at the headers comes back
        ClientCall<ForwardRequest, ForwardResponse> call =
                channel.newCall(MoeServiceGrpc.getForwardMethod(), CallOptions.DEFAULT);
        call.start(new ClientCall.Listener<>() {}, new Metadata());
        awaitQueued(1, 0);
        call.cancel("gone", null);
        awaitQueued(0, 0);
        ForwardRequest good = MoeGrpcServiceTest.request(random, 0, 6, DType.FP32, Routing.TOPK);
        answers.assertMatches(
                "after them", good, MoeServiceGrpc.newBlockingStub(channel).forward(good));
    }

    private CompletableFuture<ForwardResponse> forwardAsync(ForwardRequest request) {
        CompletableFuture<ForwardResponse> answer = new CompletableFuture<>();
        MoeServiceGrpc.newStub(channel)
                .forward(
                        request,
                        new StreamObserver<>() {
                            @Override
                            public void onNext(ForwardResponse response) {
                                answer.complete(response);
                            }

                            @Override
                            public void onError(Throwable t) {
                                answer.completeExceptionally(t);
                            }

                            @Override
                            public void onCompleted() {}
                        });
        return answer;
    }

    private void awaitQueued(int requests, long tokens) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while ((scheduler.queuedRequests() != requests || scheduler.queuedTokens() != tokens)
                && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertThat(scheduler.queuedRequests()).as("queued requests").isEqualTo(requests);
        assertThat(scheduler.queuedTokens()).as("queued tokens").isEqualTo(tokens);
    }

    /** What one ForwardStream call received. */
    private static final class Collected {
        final List<ForwardResponse> responses = new ArrayList<>();
        final CompletableFuture<Status> ended = new CompletableFuture<>();
        ClientCallStreamObserver<ForwardRequest> call;
    }

    private Collected stream(List<ForwardRequest> requests) {
        return stream(requests, true);
    }

    /** Sends {@code requests} on one ForwardStream call, half-closing after them if asked. */
    private Collected stream(List<ForwardRequest> requests, boolean halfClose) {
        Collected collected = new Collected();
        StreamObserver<ForwardRequest> out =
                MoeServiceGrpc.newStub(channel)
                        .forwardStream(
                                new ClientResponseObserver<ForwardRequest, ForwardResponse>() {
                                    @Override
                                    public void beforeStart(
                                            ClientCallStreamObserver<ForwardRequest> call) {
                                        collected.call = call;
                                    }

                                    @Override
                                    public void onNext(ForwardResponse response) {
                                        synchronized (collected) {
                                            collected.responses.add(response);
                                        }
                                    }

                                    @Override
                                    public void onError(Throwable t) {
                                        collected.ended.complete(Status.fromThrowable(t));
                                    }

                                    @Override
                                    public void onCompleted() {
                                        collected.ended.complete(Status.OK);
                                    }
                                });
        for (ForwardRequest r : requests) {
            out.onNext(r);
        }
        if (halfClose) {
            out.onCompleted();
        }
        return collected;
    }
}
