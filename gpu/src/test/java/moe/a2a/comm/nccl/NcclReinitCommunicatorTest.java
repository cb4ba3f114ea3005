package moe.a2a.comm.nccl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangeTimeoutException;
import moe.a2a.comm.PlaneBinding;

/**
 * The communicator contract on NCCL communicators that their data planes initialized afresh after a
 * failure mid-exchange: rank 0 timed out waiting for a message, so NCCL aborted its communicator,
 * it reports no parent, and the next epoch joins a new unique id (simulated).
 */
class NcclReinitCommunicatorTest extends NcclCommunicatorTest {
    @Override
    protected Communicator[] newGroup(int size, long timeoutNs) throws Exception {
        NcclPlanes planes = new NcclPlanes(size);
        int[] all = IntStream.range(0, size).toArray();
        Communicator[] first =
                planes.form(1, all, planes.bind(1, all, TimeUnit.MILLISECONDS.toNanos(50)), null);
        // a receive from itself that nothing sends: the watchdog's deadline aborts NCCL
        assertThatThrownBy(
                        () ->
                                first[0].sendRecv(
                                        Communicator.NONE,
                                        ByteBuffer.allocate(0),
                                        0,
                                        0,
                                        0,
                                        8,
                                        (buf, at, bytes) -> {}))
                .isInstanceOf(ExchangeTimeoutException.class);
        NcclPlanes.drop(first);
        List<PlaneBinding> bound = planes.bind(2, all, timeoutNs);
        assertThat(bound.get(0).parent()).as("rank 0's aborted parent").isNull();
        Communicator[] group = planes.form(2, all, bound, null);
        assertThat(planes.nccl.groupIds()).as("a fresh init").hasSize(2);
        assertThat(planes.nccl.shrinks()).isEmpty();
        return group;
    }
}
