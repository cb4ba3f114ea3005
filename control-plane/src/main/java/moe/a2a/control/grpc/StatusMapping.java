package moe.a2a.control.grpc;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.RejectedExecutionException;
import moe.a2a.comm.A2aException;
import moe.a2a.control.cluster.OutOfMemory;
import moe.a2a.protocol.InvalidRequestException;

/**
 * The one place that turns failures into gRPC statuses, by the retry litmus test: a bad field is
 * INVALID_ARGUMENT (retrying cannot help), a full queue or a request the server's memory cannot
 * hold RESOURCE_EXHAUSTED, a failed exchange UNAVAILABLE (the group is rebuilt, so a retry can
 * succeed), anything else INTERNAL.
 */
public final class StatusMapping {
    private StatusMapping() {}

    public static Status toStatus(Throwable failure) {
        Throwable t =
                failure instanceof CompletionException && failure.getCause() != null
                        ? failure.getCause()
                        : failure;
        if (t instanceof StatusRuntimeException status) {
            return status.getStatus();
        }
        if (t instanceof InvalidRequestException) {
            return Status.INVALID_ARGUMENT.withDescription(t.getMessage());
        }
        if (t instanceof RejectedExecutionException) {
            return Status.RESOURCE_EXHAUSTED.withDescription(t.getMessage());
        }
        OutOfMemoryError oom = OutOfMemory.causeOf(t);
        if (oom != null) {
            return Status.RESOURCE_EXHAUSTED.withDescription(
                    "out of memory for this request's step ("
                            + oom.getMessage()
                            + "): send fewer tokens a request, lower --max-batch-tokens, or give the"
                            + " server more memory (MOE_A2A_JAVA_OPTS=-Xmx... or"
                            + " -XX:MaxDirectMemorySize=...)");
        }
        if (t instanceof A2aException) {
            return Status.UNAVAILABLE.withDescription(t.getMessage()).withCause(t);
        }
        return Status.INTERNAL.withDescription(String.valueOf(t)).withCause(t);
    }
}
