package moe.a2a.control.grpc;

import io.grpc.Context;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiFunction;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;

/**
 * One ForwardStream call: each request is answered by its own Forward (queued as it arrives, so the
 * requests of one stream share steps with everyone's), and the answers are sent in the requests'
 * order as soon as the oldest is ready. The first failure in that order ends the call with its
 * status, saying which request it was. Cancelling the call withdraws the queued requests through
 * their context; nothing here needs to. Thread-safe: answers complete on step threads.
 */
final class ForwardStream implements StreamObserver<ForwardRequest> {
    private final BiFunction<ForwardRequest, Context, CompletableFuture<ForwardResponse>> forward;
    private final StreamObserver<ForwardResponse> responses;
    private final ArrayDeque<CompletableFuture<ForwardResponse>> unsent = new ArrayDeque<>();
    private long sent;
    private boolean halfClosed;
    private boolean ended;

    ForwardStream(
            BiFunction<ForwardRequest, Context, CompletableFuture<ForwardResponse>> forward,
            StreamObserver<ForwardResponse> responses) {
        this.forward = forward;
        this.responses = responses;
    }

    @Override
    public void onNext(ForwardRequest request) {
        synchronized (this) {
            if (ended) {
                return;
            }
        }
        CompletableFuture<ForwardResponse> answer = forward.apply(request, Context.current());
        synchronized (this) {
            if (ended) {
                return;
            }
            unsent.add(answer);
        }
        answer.whenComplete((response, failure) -> send());
    }

    @Override
    public void onError(Throwable t) {
        synchronized (this) {
            ended = true;
            unsent.clear();
        }
    }

    @Override
    public void onCompleted() {
        synchronized (this) {
            halfClosed = true;
        }
        send();
    }

    /** Sends every answer that is ready, in order; ends the call after the last or a failure. */
    private synchronized void send() {
        while (!ended && !unsent.isEmpty() && unsent.peek().isDone()) {
            CompletableFuture<ForwardResponse> answer = unsent.poll();
            if (answer.isCompletedExceptionally()) {
                ended = true;
                unsent.clear();
                Status status = StatusMapping.toStatus(answer.handle((r, e) -> e).join());
                responses.onError(
                        status.withDescription("request " + sent + ": " + status.getDescription())
                                .asRuntimeException());
                return;
            }
            responses.onNext(answer.join());
            sent++;
        }
        if (!ended && halfClosed && unsent.isEmpty()) {
            ended = true;
            responses.onCompleted();
        }
    }
}
