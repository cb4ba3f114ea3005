package moe.a2a.comm.nccl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.TimeUnit;
import moe.a2a.comm.A2aException;
import org.junit.jupiter.api.Test;

/**
 * An abort from a thread other than the rank's (a worker's AbortGroup) calls neither NCCL nor CUDA
 * there: the rank's own thread aborts NCCL, while work is in flight, at its next launch or at its
 * close, not only in a wait. Rank 0's simulated device is stuck, so its work never finishes.
 */
class NcclForeignAbortTest {
    @Test
    void shouldAbortOnTheRanksThreadAtItsNextLaunch() throws Exception {
        FakeNcclGroup group = new FakeNcclGroup(2);
        NcclCommunicator rank0 = stuckRankZero(group);
        abortOnAnotherThread(rank0);
        assertThat(group.aborted(0)).as("aborted on the other thread").isFalse();

        assertThatThrownBy(() -> NcclGraphHoldTest.exchange(rank0))
                .isInstanceOf(A2aException.class)
                .hasMessageContaining("rank 1 lost");
        assertThat(group.abortedOn(0)).isEqualTo(Thread.currentThread().getName());
        rank0.close();
    }

    @Test
    void shouldAbortOnTheRanksThreadWhenItsDataPlaneKeepsItAtClose() throws Exception {
        FakeNcclGroup group = new FakeNcclGroup(2);
        NcclCommunicator rank0 = stuckRankZero(group);
        rank0.keepForPlane();
        abortOnAnotherThread(rank0);

        rank0.close();
        assertThat(group.abortedOn(0))
                .as("work in flight aborted before the close waits for the stream")
                .isEqualTo(Thread.currentThread().getName());
        rank0.release();
    }

    /** Rank 0's communicator, made on this thread, its device stuck with work on it. */
    private static NcclCommunicator stuckRankZero(FakeNcclGroup group) {
        NcclCommunicator rank0 = group.communicator(0, TimeUnit.MINUTES.toNanos(1));
        group.communicator(1, TimeUnit.MINUTES.toNanos(1));
        group.stick(0);
        return rank0;
    }

    private static void abortOnAnotherThread(NcclCommunicator comm) throws InterruptedException {
        Thread.ofPlatform().start(() -> comm.abort(new A2aException("rank 1 lost"))).join();
    }
}
