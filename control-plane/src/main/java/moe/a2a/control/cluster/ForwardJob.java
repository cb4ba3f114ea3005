package moe.a2a.control.cluster;

import com.google.protobuf.ByteString;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import moe.a2a.experts.RoutingInput;
import moe.a2a.kernels.DType;
import org.jspecify.annotations.Nullable;

/**
 * One validated Forward request waiting for its step. Requests are batched into one step only when
 * their layer, dtype and routing kind agree. Immutable apart from its future and its slot.
 *
 * @param tokens {@code [T, H]} in {@code dtype}, little-endian
 * @param routing the request's own routing ({@code [T, ...]} arrays)
 * @param abandoned while the caller still wants the answer, null; once its deadline passed or it
 *     cancelled, the failure to answer it with (it then never takes a step)
 * @param queued true while the job holds a slot of the scheduler's queue; whoever turns it false
 *     (the scheduler taking the job into a step or dropping it, or its caller withdrawing it) gives
 *     the slot back, exactly once
 */
public record ForwardJob(
        int layer,
        DType dtype,
        int numTokens,
        ByteString tokens,
        RoutingInput routing,
        long enqueuedNanos,
        Supplier<@Nullable RuntimeException> abandoned,
        CompletableFuture<ForwardOutcome> result,
        AtomicBoolean queued) {

    /** A job not yet queued. */
    public ForwardJob(
            int layer,
            DType dtype,
            int numTokens,
            ByteString tokens,
            RoutingInput routing,
            long enqueuedNanos,
            Supplier<@Nullable RuntimeException> abandoned,
            CompletableFuture<ForwardOutcome> result) {
        this(
                layer,
                dtype,
                numTokens,
                tokens,
                routing,
                enqueuedNanos,
                abandoned,
                result,
                new AtomicBoolean(true));
    }

    /** Whether this job can ride in the same step as {@code other}. */
    boolean batchesWith(ForwardJob other) {
        return layer == other.layer
                && dtype == other.dtype
                && routing.getClass() == other.routing.getClass();
    }
}
