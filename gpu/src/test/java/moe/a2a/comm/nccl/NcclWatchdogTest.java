package moe.a2a.comm.nccl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.bytedeco.cuda.global.nccl.ncclInProgress;
import static org.bytedeco.cuda.global.nccl.ncclRemoteError;
import static org.bytedeco.cuda.global.nccl.ncclSuccess;
import static org.bytedeco.cuda.global.nccl.ncclSystemError;

import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ExchangeTimeoutException;
import moe.a2a.comm.PeerFailedException;
import org.junit.jupiter.api.Test;

/** The watchdog's decisions on a fake clock: done, error, timeout, and "still launching". */
class NcclWatchdogTest {
    private long now;
    private final NcclWatchdog watchdog = new NcclWatchdog(() -> now, waited -> now += 1_000_000);

    /**
     * Idle after {@code idleAfter} polls; reports {@code errorAt} from poll {@code errorAfter} on.
     */
    private static class Script implements NcclWatchdog.Progress {
        final int idleAfter;
        final int errorAfter;
        final int error;
        int polls;
        int aborts;

        Script(int idleAfter, int errorAfter, int error) {
            this.idleAfter = idleAfter;
            this.errorAfter = errorAfter;
            this.error = error;
        }

        @Override
        public int asyncError() {
            polls++;
            if (polls > errorAfter) {
                return error;
            }
            return polls <= idleAfter ? ncclInProgress : ncclSuccess;
        }

        @Override
        public boolean isIdle() {
            return polls > idleAfter;
        }

        @Override
        public void abort() {
            aborts++;
        }

        @Override
        public String lastError() {
            return "socket closed by peer";
        }
    }

    @Test
    void shouldReturnWithoutAbortWhenWorkFinishesBeforeDeadline() {
        Script work = new Script(5, Integer.MAX_VALUE, ncclSuccess);
        watchdog.await(work, 10_000_000, 7, ExchangePhase.DISPATCH, 1, "all-to-all-v");
        assertThat(work.polls).isEqualTo(6);
        assertThat(work.aborts).isZero();
        assertThat(now).isEqualTo(5_000_000);
    }

    @Test
    void shouldReturnOnceLaunchedWithoutAskingTheStream() {
        Script work =
                new Script(3, Integer.MAX_VALUE, ncclSuccess) {
                    @Override
                    public boolean isIdle() {
                        throw new AssertionError("the stream is being captured: not to be asked");
                    }
                };
        watchdog.awaitLaunched(work, 10_000_000, 7, ExchangePhase.DISPATCH, 1, "fixed all-to-all");
        assertThat(work.polls).isEqualTo(4);
        assertThat(work.aborts).isZero();
    }

    @Test
    void shouldAbortWhenLaunchingNeverEnds() {
        Script work = new Script(Integer.MAX_VALUE, Integer.MAX_VALUE, ncclSuccess);
        assertThatThrownBy(
                        () ->
                                watchdog.awaitLaunched(
                                        work,
                                        3_500_000,
                                        7,
                                        ExchangePhase.COMBINE,
                                        2,
                                        "fixed all-to-all"))
                .isInstanceOf(ExchangeTimeoutException.class);
        assertThat(work.aborts).isEqualTo(1);
    }

    @Test
    void shouldAbortAndThrowTimeoutWhenDeadlinePasses() {
        Script work = new Script(Integer.MAX_VALUE, Integer.MAX_VALUE, ncclSuccess);
        assertThatThrownBy(
                        () ->
                                watchdog.await(
                                        work,
                                        3_500_000,
                                        7,
                                        ExchangePhase.COMBINE,
                                        2,
                                        "all-to-all-v"))
                .isInstanceOfSatisfying(
                        ExchangeTimeoutException.class,
                        e -> {
                            assertThat(e.step()).isEqualTo(7);
                            assertThat(e.phase()).isEqualTo(ExchangePhase.COMBINE);
                            assertThat(e.rank()).isEqualTo(2);
                            assertThat(e.peer()).isEqualTo(ExchangeTimeoutException.UNKNOWN_PEER);
                        })
                .hasMessageContaining("peer=unknown");
        assertThat(work.aborts).isEqualTo(1);
        assertThat(now).isEqualTo(4_000_000);
    }

    @Test
    void shouldAbortAndNamePeerFailureOnRemoteError() {
        Script work = new Script(Integer.MAX_VALUE, 3, ncclRemoteError);
        assertThatThrownBy(
                        () ->
                                watchdog.await(
                                        work,
                                        1_000_000_000,
                                        0,
                                        ExchangePhase.DISPATCH,
                                        3,
                                        "counts exchange"))
                .isInstanceOf(PeerFailedException.class)
                .hasMessageContaining("rank=3")
                .hasMessageContaining(
                        "counts exchange returned ncclRemoteError (6): socket closed by peer");
        assertThat(work.aborts).isEqualTo(1);
    }

    @Test
    void shouldAbortOnSystemErrorEvenWhenStreamLooksIdle() {
        Script work = new Script(0, 0, ncclSystemError);
        assertThatThrownBy(
                        () ->
                                watchdog.await(
                                        work,
                                        1_000_000_000,
                                        0,
                                        ExchangePhase.DISPATCH,
                                        0,
                                        "all-to-all-v"))
                .hasMessageContaining("ncclSystemError (2)")
                .isNotInstanceOf(PeerFailedException.class);
        assertThat(work.aborts).isEqualTo(1);
    }

    @Test
    void shouldAbortWhenInterrupted() {
        Script work = new Script(Integer.MAX_VALUE, Integer.MAX_VALUE, ncclSuccess);
        Thread.currentThread().interrupt();
        try {
            assertThatThrownBy(
                            () ->
                                    watchdog.await(
                                            work,
                                            1_000_000_000,
                                            0,
                                            ExchangePhase.DISPATCH,
                                            0,
                                            "all-to-all-v"))
                    .hasMessageContaining("interrupted");
            assertThat(work.aborts).isEqualTo(1);
        } finally {
            Thread.interrupted();
        }
    }
}
