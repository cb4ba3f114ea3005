package moe.a2a.client;

import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import moe.a2a.v1.DescribeModelRequest;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import moe.a2a.v1.ModelInfo;
import moe.a2a.v1.MoeServiceGrpc;
import moe.a2a.v1.RouteRequest;
import moe.a2a.v1.RouteResponse;
import moe.a2a.v1.Tensor;
import moe.a2a.v1.TopK;
import org.jspecify.annotations.Nullable;

/**
 * MoeService with futures: {@link MoeClient}'s calls, each completing on a gRPC thread (or failing
 * with a {@code StatusRuntimeException}). Thread-safe; close it to close its channel.
 */
public final class MoeAsyncClient implements AutoCloseable {
    private final ManagedChannel channel;
    private final @Nullable Duration deadline;

    MoeAsyncClient(ManagedChannel channel, @Nullable Duration deadline) {
        this.channel = channel;
        this.deadline = deadline;
    }

    public CompletableFuture<ForwardResponse> forward(ForwardRequest request) {
        CompletableFuture<ForwardResponse> answer = new CompletableFuture<>();
        stub().forward(request, new One<>(answer));
        return answer;
    }

    /** Layer {@code layer} on {@code [T, H]} {@code hiddenStates}, routed by the model's gate. */
    public CompletableFuture<ForwardResponse> forward(int layer, Tensor hiddenStates) {
        return forward(Tensors.request(layer, hiddenStates, null));
    }

    /** As {@link #forward(int, Tensor)}, routed as {@code topK} says. */
    public CompletableFuture<ForwardResponse> forward(int layer, Tensor hiddenStates, TopK topK) {
        return forward(Tensors.request(layer, hiddenStates, topK));
    }

    /** Every request on one ForwardStream call; the answers in the requests' order. */
    public CompletableFuture<List<ForwardResponse>> forwardAll(List<ForwardRequest> requests) {
        CompletableFuture<List<ForwardResponse>> answers = new CompletableFuture<>();
        List<ForwardResponse> got = new ArrayList<>(requests.size());
        StreamObserver<ForwardRequest> out =
                stub().forwardStream(
                                new StreamObserver<>() {
                                    @Override
                                    public void onNext(ForwardResponse r) {
                                        got.add(r);
                                    }

                                    @Override
                                    public void onError(Throwable t) {
                                        answers.completeExceptionally(t);
                                    }

                                    @Override
                                    public void onCompleted() {
                                        answers.complete(List.copyOf(got));
                                    }
                                });
        requests.forEach(out::onNext);
        out.onCompleted();
        return answers;
    }

    public CompletableFuture<RouteResponse> route(RouteRequest request) {
        CompletableFuture<RouteResponse> answer = new CompletableFuture<>();
        stub().route(request, new One<>(answer));
        return answer;
    }

    public CompletableFuture<ModelInfo> describeModel() {
        CompletableFuture<ModelInfo> answer = new CompletableFuture<>();
        stub().describeModel(DescribeModelRequest.getDefaultInstance(), new One<>(answer));
        return answer;
    }

    /** Closes the channel, waiting up to 5 s for calls in flight. */
    @Override
    public void close() {
        MoeClient.shutdown(channel);
    }

    private MoeServiceGrpc.MoeServiceStub stub() {
        MoeServiceGrpc.MoeServiceStub stub = MoeServiceGrpc.newStub(channel);
        return deadline == null
                ? stub
                : stub.withDeadlineAfter(deadline.toNanos(), TimeUnit.NANOSECONDS);
    }

    /** A unary call's answer into a future. */
    private record One<T>(CompletableFuture<T> answer) implements StreamObserver<T> {
        @Override
        public void onNext(T value) {
            answer.complete(value);
        }

        @Override
        public void onError(Throwable t) {
            answer.completeExceptionally(t);
        }

        @Override
        public void onCompleted() {}
    }
}
