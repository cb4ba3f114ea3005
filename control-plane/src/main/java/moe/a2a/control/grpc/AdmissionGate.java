package moe.a2a.control.grpc;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import moe.a2a.control.cluster.StepScheduler;
import moe.a2a.v1.MoeServiceGrpc;

/**
 * Refuses a Forward call as its headers arrive when the queue is already full (or the server is
 * shutting down), before its tokens are received and parsed: under overload a refusal then costs
 * the server next to nothing and comes back at once, instead of after the whole request has crossed
 * a busy connection. The scheduler's own check at submit stays the exact one.
 */
final class AdmissionGate implements ServerInterceptor {
    private final StepScheduler scheduler;

    AdmissionGate(StepScheduler scheduler) {
        this.scheduler = scheduler;
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        if (call.getMethodDescriptor() == MoeServiceGrpc.getForwardMethod()) {
            RuntimeException refusal = scheduler.refusalNow();
            if (refusal != null) {
                call.close(StatusMapping.toStatus(refusal), new Metadata());
                return new ServerCall.Listener<>() {};
            }
        }
        return next.startCall(call, headers);
    }
}
