package moe.a2a.control.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import java.util.concurrent.CompletionException;
import java.util.concurrent.RejectedExecutionException;
import moe.a2a.comm.A2aException;
import moe.a2a.protocol.InvalidRequestException;
import org.junit.jupiter.api.Test;

/**
 * Each kind of failure gets the status its retry litmus test asks for; running out of memory is
 * RESOURCE_EXHAUSTED wherever it happened, a rank's step that wraps it included.
 */
class StatusMappingTest {

    @Test
    void shouldMapEachFailureByWhetherARetryCanHelp() {
        assertThat(code(new InvalidRequestException("layer: 9 (expected: [0, 1))")))
                .isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(code(new RejectedExecutionException("queue full")))
                .isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertThat(code(new CompletionException(new A2aException("rank 1 lost"))))
                .isEqualTo(Status.Code.UNAVAILABLE);
        assertThat(code(new IllegalStateException("bug"))).isEqualTo(Status.Code.INTERNAL);
    }

    @Test
    void shouldMapOutOfMemoryToResourceExhaustedEvenInsideAFailedStep() {
        OutOfMemoryError oom = new OutOfMemoryError("Java heap space");
        for (Throwable t :
                new Throwable[] {
                    oom,
                    new CompletionException(oom),
                    new A2aException("step failed: layer=0", oom),
                    new CompletionException(new A2aException("step failed: layer=0", oom))
                }) {
            Status status = StatusMapping.toStatus(t);
            assertThat(status.getCode()).as("%s", t).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
            assertThat(status.getDescription())
                    .startsWith("out of memory for this request's step (Java heap space)")
                    .contains("--max-batch-tokens");
        }
    }

    private static Status.Code code(Throwable t) {
        return StatusMapping.toStatus(t).getCode();
    }
}
