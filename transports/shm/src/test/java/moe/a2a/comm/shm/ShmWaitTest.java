package moe.a2a.comm.shm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.ExchangePhase;
import org.junit.jupiter.api.Test;

/** The wait's failure rule: a failure seen by one pause throws only after one more pass. */
class ShmWaitTest {
    private final AtomicBoolean aborted = new AtomicBoolean();
    private final AtomicInteger abortChecks = new AtomicInteger();

    private final ShmWait wait =
            new ShmWait(
                    0,
                    2,
                    60_000_000_000L,
                    new ShmWait.Checks() {
                        @Override
                        public void throwIfAborted() {
                            abortChecks.incrementAndGet();
                            if (aborted.get()) {
                                throw new A2aException("peer 1 closed");
                            }
                        }

                        @Override
                        public void checkAlive(int peer, long now) {}
                    });

    @Test
    void shouldGiveTheCallerOnePassAfterAnAbortBeforeThrowing() {
        wait.all(3, ExchangePhase.DISPATCH);
        wait.idle();
        aborted.set(true);
        // the peer closed after delivering: the pass after this pause finds its segment
        wait.idle();
        wait.pass(true);
        assertThat(abortChecks).hasValue(2);
        // a pass that finds nothing more: the failure seen is thrown, without checking again
        assertThatThrownBy(wait::idle).isInstanceOf(A2aException.class).hasMessage("peer 1 closed");
        assertThat(abortChecks).hasValue(2);
    }

    @Test
    void shouldForgetASeenFailureWhenTheNextWaitStarts() {
        wait.one(1);
        aborted.set(true);
        wait.idle();
        aborted.set(false);
        wait.one(1);
        wait.idle();
        wait.idle();
        assertThat(abortChecks).hasValue(3);
    }
}
