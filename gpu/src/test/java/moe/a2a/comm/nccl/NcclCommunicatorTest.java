package moe.a2a.comm.nccl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.AbstractCommunicatorTest;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.RankThreads;
import org.junit.jupiter.api.Test;

/**
 * The communicator contract on {@link NcclCommunicator} over {@link FakeNcclGroup}: everything but
 * the native calls — staging, segment layout, the counts exchange, the watchdog's timeout and error
 * paths.
 */
class NcclCommunicatorTest extends AbstractCommunicatorTest {
    @Override
    protected Communicator[] newGroup(int size, long timeoutNs) throws Exception {
        return FakeNcclGroup.group(size, timeoutNs);
    }

    /** NCCL does not say which peer is missing. */
    @Override
    protected boolean namesMissingPeer() {
        return false;
    }

    /**
     * ncclCommAbort is local: the other ranks learn of it at their deadline (or from the control
     * plane).
     */
    @Override
    protected boolean propagatesAbort() {
        return false;
    }

    @Test
    void shouldFailBothRanksWhenCountsDisagree() throws Exception {
        Communicator[] group = newGroup(2, TimeUnit.SECONDS.toNanos(10));
        List<Throwable> failures =
                RankThreads.run(
                        2,
                        rank -> {
                            long[] send = {4, 4};
                            long[] recv = rank == 0 ? new long[] {4, 5} : new long[] {4, 4};
                            try {
                                group[rank].allToAllV(
                                        0,
                                        ExchangePhase.DISPATCH,
                                        ByteBuffer.allocateDirect(8),
                                        send,
                                        ByteBuffer.allocateDirect(9),
                                        recv);
                                return null;
                            } catch (A2aException e) {
                                return e;
                            }
                        });
        assertThat(failures.get(0))
                .isInstanceOf(A2aException.class)
                .hasMessageContaining("ncclInvalidUsage")
                .hasMessageContaining("rank 0");
        assertThatThrownBy(() -> group[0].barrier())
                .isInstanceOf(A2aException.class)
                .hasMessageContaining("broken");
        for (Communicator c : group) {
            c.close();
        }
    }
}
