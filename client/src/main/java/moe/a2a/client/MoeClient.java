package moe.a2a.client;

import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
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
 * MoeService, blocking: each call returns the answer or throws grpc-java's {@code
 * StatusRuntimeException}. Thread-safe; close it to close its channel.
 */
public final class MoeClient implements AutoCloseable {
    private final ManagedChannel channel;
    private final @Nullable Duration deadline;
    private final MoeAsyncClient streams;

    MoeClient(ManagedChannel channel, @Nullable Duration deadline) {
        this.channel = channel;
        this.deadline = deadline;
        this.streams = new MoeAsyncClient(channel, deadline);
    }

    public ForwardResponse forward(ForwardRequest request) {
        return stub().forward(request);
    }

    /** Layer {@code layer} on {@code [T, H]} {@code hiddenStates}, routed by the model's gate. */
    public ForwardResponse forward(int layer, Tensor hiddenStates) {
        return forward(Tensors.request(layer, hiddenStates, null));
    }

    /** As {@link #forward(int, Tensor)}, routed as {@code topK} says. */
    public ForwardResponse forward(int layer, Tensor hiddenStates, TopK topK) {
        return forward(Tensors.request(layer, hiddenStates, topK));
    }

    /** Every request on one ForwardStream call; the answers in the requests' order. */
    public List<ForwardResponse> forwardAll(List<ForwardRequest> requests) {
        try {
            return streams.forwardAll(requests).get();
        } catch (ExecutionException e) {
            throw unwrapped(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CompletionException(e);
        }
    }

    public RouteResponse route(RouteRequest request) {
        return stub().route(request);
    }

    public ModelInfo describeModel() {
        return stub().describeModel(DescribeModelRequest.getDefaultInstance());
    }

    /** Closes the channel, waiting up to 5 s for calls in flight. */
    @Override
    public void close() {
        shutdown(channel);
    }

    static void shutdown(ManagedChannel channel) {
        channel.shutdown();
        try {
            if (!channel.awaitTermination(5, TimeUnit.SECONDS)) {
                channel.shutdownNow();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            channel.shutdownNow();
        }
    }

    private static RuntimeException unwrapped(Throwable cause) {
        return cause instanceof StatusRuntimeException s ? s : new CompletionException(cause);
    }

    private MoeServiceGrpc.MoeServiceBlockingStub stub() {
        MoeServiceGrpc.MoeServiceBlockingStub stub = MoeServiceGrpc.newBlockingStub(channel);
        return deadline == null
                ? stub
                : stub.withDeadlineAfter(deadline.toNanos(), TimeUnit.NANOSECONDS);
    }
}
