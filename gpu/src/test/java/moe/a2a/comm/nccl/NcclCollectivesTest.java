package moe.a2a.comm.nccl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.AbstractCollectivesTest;
import moe.a2a.comm.CollectiveAlgo;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.RankThreads;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;
import org.junit.jupiter.api.Test;

/**
 * The collectives contract on {@link NcclCommunicator} over {@link FakeNcclGroup}: NCCL's own calls
 * (all-reduce, all-gather, reduce-scatter, broadcast, grouped send/recv) with their staging,
 * argument checks, error and timeout paths, computed by the simulated ranks.
 */
class NcclCollectivesTest extends AbstractCollectivesTest {
    @Override
    protected Communicator[] newGroup(int size, long timeoutNs) {
        return FakeNcclGroup.group(size, timeoutNs);
    }

    /** A collective's timeout cannot say which peer is missing: NCCL does not tell. */
    @Override
    protected boolean namesMissingPeer() {
        return false;
    }

    /** ncclCommAbort is local: the other ranks fail at their deadline. */
    @Override
    protected boolean propagatesAbort() {
        return false;
    }

    @Test
    void shouldFailNamingTheCallAndRankWhenRanksDisagreeOnACollective() throws Exception {
        Communicator[] group = newGroup(2, TimeUnit.SECONDS.toNanos(10));
        List<Throwable> failures =
                RankThreads.run(
                        2,
                        r -> {
                            int count = r == 0 ? 4 : 5;
                            ByteBuffer buf = direct(4 * 5);
                            try {
                                group[r].allReduce(
                                        buf,
                                        buf,
                                        count,
                                        DType.FP32,
                                        ReduceOp.SUM,
                                        CollectiveAlgo.AUTO);
                                return null;
                            } catch (A2aException e) {
                                return e;
                            }
                        });
        for (int r = 0; r < 2; r++) {
            assertThat(failures.get(r))
                    .isInstanceOf(A2aException.class)
                    .hasMessageContaining("ncclAllReduce")
                    .hasMessageContaining("ncclInvalidUsage")
                    .hasMessageContaining("rank " + r);
        }
        assertThatThrownBy(() -> group[0].allGather(direct(4), direct(8), 4))
                .isInstanceOf(A2aException.class)
                .hasMessageContaining("broken");
    }

    @Test
    void shouldFailNamingTheCallAndRankWhenTheLaunchFails() {
        FakeNcclGroup fake = new FakeNcclGroup(1);
        NcclBackend backend = fake.backend(0);
        NcclCommunicator comm =
                new NcclCommunicator(backend, NcclWatchdog.system(), TimeUnit.SECONDS.toNanos(10));
        // aborted below the communicator, as after a failure it has not seen yet: every launch
        // then returns ncclSystemError
        backend.abort();
        assertThatThrownBy(() -> comm.broadcast(direct(8), 8, 0, CollectiveAlgo.AUTO))
                .isInstanceOf(A2aException.class)
                .hasMessageContaining("ncclBroadcast returned ncclSystemError")
                .hasMessageContaining("rank 0");
        comm.close();
    }

    @Test
    void shouldTimeOutNamingThePeerOfAPointToPointMessage() throws Exception {
        Communicator[] group = newGroup(2, TimeUnit.MILLISECONDS.toNanos(300));
        assertThatThrownBy(() -> group[0].recv(1, direct(4), 0, 4))
                .isInstanceOf(A2aException.class)
                .hasMessageContaining("peer=1");
    }
}
