package moe.a2a.worker;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import moe.a2a.v1.ControlMessage;

/**
 * A worker's end of one control-plane session, inbound: hands each control message on, and notes
 * whether the control plane accepted this worker and how the session ended. Called by the call's
 * serialized callbacks; read by the thread that waits for the end.
 */
final class SessionAdapter implements StreamObserver<ControlMessage> {
    private final Consumer<ControlMessage> handler;
    private final CountDownLatch ended = new CountDownLatch(1);
    private volatile boolean accepted;
    private volatile Status end = Status.OK;

    /**
     * @param handler takes each message on a gRPC thread, so it must only pass it on
     */
    SessionAdapter(Consumer<ControlMessage> handler) {
        this.handler = handler;
    }

    @Override
    public void onNext(ControlMessage message) {
        if (message.hasAccepted()) {
            accepted = true;
        }
        handler.accept(message);
    }

    @Override
    public void onError(Throwable t) {
        end = Status.fromThrowable(t);
        ended.countDown();
    }

    @Override
    public void onCompleted() {
        end = Status.UNAVAILABLE.withDescription("control plane ended the session");
        ended.countDown();
    }

    /** Waits up to {@code timeout} for the session to end; true if it did. */
    boolean awaitEnd(long timeout, TimeUnit unit) throws InterruptedException {
        return ended.await(timeout, unit);
    }

    /** Whether the control plane accepted this worker during the session. */
    boolean accepted() {
        return accepted;
    }

    /** How the session ended; OK while it has not. */
    Status end() {
        return end;
    }
}
