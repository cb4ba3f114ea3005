package moe.a2a.control.grpc;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import java.util.concurrent.atomic.AtomicBoolean;
import moe.a2a.control.cluster.StepScheduler;
import moe.a2a.v1.MoeServiceGrpc;

/**
 * Admits a Forward call as its headers arrive: it takes the request's queue slot then, or refuses
 * the call at once when the queue is full (or the server is shutting down), before its tokens are
 * received and parsed. Under overload a refusal then costs the server next to nothing and comes
 * back at once, instead of after the whole request has crossed a busy connection. The slot travels
 * in the call's context to the service, which hands it to the scheduler with the request ({@link
 * #takeSlot}); a call that ends without doing so (refused as malformed or invalid, cancelled,
 * expired) gives it back. The tokens' bound is checked when they have arrived. A call is known by
 * its method's name: the service it guards takes its requests as streams ({@link
 * MalformedMessages}), whose method descriptors are copies of the generated ones.
 */
final class AdmissionGate implements ServerInterceptor {
    private static final Context.Key<AtomicBoolean> SLOT = Context.key("moe-a2a-queue-slot");

    private final StepScheduler scheduler;

    AdmissionGate(StepScheduler scheduler) {
        this.scheduler = scheduler;
    }

    /**
     * {@code service} as the client port serves it: requests that are not their method's message
     * answered ({@link MalformedMessages}), Forward calls admitted at their headers.
     */
    static ServerServiceDefinition serve(MoeGrpcService service, StepScheduler scheduler) {
        return ServerInterceptors.intercept(
                MalformedMessages.guard(service), new AdmissionGate(scheduler));
    }

    /**
     * Whether the gate holds a queue slot for {@code context}'s call, which the caller now owns.
     */
    static boolean takeSlot(Context context) {
        AtomicBoolean slot = SLOT.get(context);
        return slot != null && slot.getAndSet(false);
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        if (!call.getMethodDescriptor()
                .getFullMethodName()
                .equals(MoeServiceGrpc.getForwardMethod().getFullMethodName())) {
            return next.startCall(call, headers);
        }
        RuntimeException refusal = scheduler.reserveSlot();
        if (refusal != null) {
            call.close(StatusMapping.toStatus(refusal), new Metadata());
            return new ServerCall.Listener<>() {};
        }
        AtomicBoolean slot = new AtomicBoolean(true);
        ServerCall.Listener<Q> listener =
                Contexts.interceptCall(
                        Context.current().withValue(SLOT, slot), call, headers, next);
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(listener) {
            @Override
            public void onCancel() {
                giveBack(slot);
                super.onCancel();
            }

            @Override
            public void onComplete() {
                giveBack(slot);
                super.onComplete();
            }
        };
    }

    private void giveBack(AtomicBoolean slot) {
        if (slot.getAndSet(false)) {
            scheduler.releaseSlot();
        }
    }
}
