package moe.a2a.control.grpc;

import com.google.protobuf.InvalidProtocolBufferException;
import io.grpc.BindableService;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.jspecify.annotations.Nullable;

/**
 * Answers a request whose bytes are not its method's message with INVALID_ARGUMENT, and one that
 * decompresses past the size limit, or that the heap cannot hold as it is parsed, with
 * RESOURCE_EXHAUSTED, instead of grpc-java's UNKNOWN and a stack trace logged per call: the service
 * takes its requests as streams, and this interceptor watches them being parsed. Stateless apart
 * from each call's listener.
 */
final class MalformedMessages implements ServerInterceptor {

    /** {@code service} with its requests parsed where this interceptor sees the failures. */
    static ServerServiceDefinition guard(BindableService service) {
        return ServerInterceptors.intercept(
                ServerInterceptors.useInputStreamMessages(service.bindService()),
                new MalformedMessages());
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(
                next.startCall(call, headers)) {
            private boolean refused;

            @Override
            public void onMessage(Q message) {
                if (refused) {
                    return;
                }
                try {
                    super.onMessage(message);
                } catch (StatusRuntimeException e) {
                    Status status = refusal(call, e);
                    if (status == null) {
                        throw e;
                    }
                    refused = true;
                    call.close(status, new Metadata());
                } catch (OutOfMemoryError e) {
                    refused = true;
                    call.close(StatusMapping.toStatus(e), new Metadata());
                }
            }

            @Override
            public void onHalfClose() {
                if (!refused) {
                    super.onHalfClose();
                }
            }
        };
    }

    /** The status for a request that failed to parse, or null for any other failure. */
    private static @Nullable Status refusal(ServerCall<?, ?> call, StatusRuntimeException e) {
        if (e.getStatus().getCode() == Status.Code.RESOURCE_EXHAUSTED) {
            return e.getStatus();
        }
        if (e.getCause() instanceof InvalidProtocolBufferException bad) {
            return Status.INVALID_ARGUMENT.withDescription(
                    "request: not a "
                            + call.getMethodDescriptor().getFullMethodName()
                            + " request message ("
                            + bad.getMessage()
                            + ")");
        }
        return null;
    }
}
