package moe.a2a.comm.nccl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ExchangeTimeoutException;
import org.junit.jupiter.api.Test;

/**
 * A communicator held by CUDA graphs: NCCL 2.26+ aborts or destroys it only once no graph that
 * captured its calls is left, an open capture included (the simulated NCCL fails where NCCL would
 * wait forever), so the graphs are dropped first, on the thread that owns them.
 */
class NcclGraphHoldTest {
    private static final long[] COUNTS = {8, 8};

    /** The graph drop of the tests: destroys rank 0's graph once, noting the thread. */
    private static final class Drop implements Runnable {
        final FakeNcclGroup group;
        final List<String> log = new CopyOnWriteArrayList<>();
        boolean held = true;

        Drop(FakeNcclGroup group) {
            this.group = group;
            group.graphs(0, 1);
        }

        @Override
        public void run() {
            if (held) {
                held = false;
                log.add(Thread.currentThread().getName() + " aborted=" + group.aborted(0));
                group.graphs(0, -1);
            }
        }
    }

    @Test
    void shouldDropTheGraphsBeforeTheWatchdogAborts() {
        FakeNcclGroup group = new FakeNcclGroup(2);
        NcclCommunicator rank0 = group.communicator(0, TimeUnit.MILLISECONDS.toNanos(200));
        group.communicator(1, TimeUnit.MILLISECONDS.toNanos(200));
        Drop drop = new Drop(group);
        rank0.holdGraphs(drop);

        // rank 1 never joins: the wait times out and aborts
        assertThatThrownBy(() -> exchange(rank0)).isInstanceOf(A2aException.class);
        assertThat(drop.log).containsExactly(Thread.currentThread().getName() + " aborted=false");
        assertThat(group.aborted(0)).isTrue();
        rank0.close();
    }

    /**
     * A shrink that fails (here the other survivor never calls it) aborts its parent: the graphs
     * holding the parent are dropped first, on their owner's thread.
     */
    @Test
    void shouldDropTheGraphsBeforeAShrinkThatMayAbortTheParent() {
        FakeNcclGroup group = new FakeNcclGroup(3);
        NcclCommunicator rank0 = group.communicator(0, TimeUnit.MILLISECONDS.toNanos(200));
        group.communicator(1, TimeUnit.MILLISECONDS.toNanos(200));
        group.communicator(2, TimeUnit.MILLISECONDS.toNanos(200));
        Drop drop = new Drop(group);
        rank0.holdGraphs(drop);

        assertThatThrownBy(() -> rank0.shrink(new int[] {2}, TimeUnit.MILLISECONDS.toNanos(200)))
                .isInstanceOf(ExchangeTimeoutException.class);
        assertThat(drop.log).containsExactly(Thread.currentThread().getName() + " aborted=false");
        assertThat(group.aborted(0)).as("the failed shrink aborted the parent").isTrue();
        rank0.close();
    }

    /**
     * Another thread's abort is carried out by the owner's wait at its next poll: well before its
     * deadline of a minute (the test waits 10 s for it).
     */
    @Test
    void shouldLeaveTheAbortToTheOwnersWaitWhenAnotherThreadAborts() throws Exception {
        FakeNcclGroup group = new FakeNcclGroup(2);
        NcclCommunicator rank0 = group.communicator(0, TimeUnit.MINUTES.toNanos(1));
        group.communicator(1, TimeUnit.MINUTES.toNanos(1));
        Drop drop = new Drop(group);
        CountDownLatch holding = new CountDownLatch(1);
        Thread owner =
                Thread.ofPlatform()
                        .name("rank-0")
                        .unstarted(
                                () -> {
                                    rank0.holdGraphs(drop);
                                    holding.countDown();
                                    exchange(rank0);
                                });
        CompletableFuture<Throwable> failed = new CompletableFuture<>();
        owner.setUncaughtExceptionHandler((t, e) -> failed.complete(e));
        owner.start();
        holding.await();
        while (!group.pending(0)) {
            Thread.sleep(1);
        }
        rank0.abort(new A2aException("peer 1 lost"));
        // the owner's next poll may already have carried it out, on its own thread
        assertThat(group.abortedOn(0)).as("aborted from another thread").isIn("", "rank-0");

        assertThat(failed.get(10, TimeUnit.SECONDS))
                .isInstanceOf(A2aException.class)
                .hasMessageContaining("peer 1 lost");
        assertThat(drop.log).containsExactly("rank-0 aborted=false");
        assertThat(group.abortedOn(0)).isEqualTo("rank-0");
        owner.join();
    }

    /** A timeout while a capture is open: NCCL is aborted only once the capture has ended. */
    @Test
    void shouldAbortOnlyOnceTheCaptureEnds() {
        FakeNcclGroup group = new FakeNcclGroup(2);
        NcclCommunicator rank0 = group.communicator(0, TimeUnit.MILLISECONDS.toNanos(200));
        group.communicator(1, TimeUnit.MILLISECONDS.toNanos(200));
        Drop drop = new Drop(group);
        rank0.holdGraphs(drop);
        openCapture(group, rank0);

        assertThatThrownBy(() -> exchange(rank0)).isInstanceOf(A2aException.class);
        assertThat(group.aborted(0)).as("aborted while capturing").isFalse();
        assertThat(drop.log).isEmpty();

        endCaptureAndFree(group, rank0, drop);
        assertThat(group.closed(0)).isTrue();
    }

    /**
     * Another thread aborts an idle communicator while its owner captures: the stream under capture
     * is not queried (that would invalidate the capture), and NCCL's abort waits for the owner.
     */
    @Test
    void shouldNotQueryTheStreamUnderCaptureWhenAnotherThreadAborts() throws Exception {
        FakeNcclGroup group = new FakeNcclGroup(1);
        NcclCommunicator rank0 = group.communicator(0, TimeUnit.SECONDS.toNanos(1));
        Drop drop = new Drop(group);
        rank0.holdGraphs(drop);
        group.capture(0, true);
        openCapture(group, rank0);

        Thread other = Thread.ofPlatform().start(() -> rank0.abort(new A2aException("dropped")));
        other.join();
        assertThat(group.queriedUnderCapture(0)).as("stream queried under capture").isFalse();
        assertThat(group.aborted(0)).as("aborted while capturing").isFalse();

        group.capture(0, false);
        endCaptureAndFree(group, rank0, drop);
    }

    /** Opens a capture of rank 0's calls: NCCL counts it as a graph until it ends. */
    private static void openCapture(FakeNcclGroup group, NcclCommunicator rank0) {
        group.graphs(0, 1);
        rank0.capturing(true);
    }

    /**
     * The capture ends and its partial graph is destroyed; then the rank frees the group on this
     * thread: its graphs are dropped first, then NCCL aborts.
     */
    private static void endCaptureAndFree(FakeNcclGroup group, NcclCommunicator rank0, Drop drop) {
        group.graphs(0, -1);
        rank0.capturing(false);
        rank0.close();
        assertThat(drop.log).containsExactly(Thread.currentThread().getName() + " aborted=false");
        assertThat(group.aborted(0)).isTrue();
    }

    @Test
    void shouldFreeOnlyOnTheGraphsThreadWhileTheyAreHeld() throws Exception {
        FakeNcclGroup group = new FakeNcclGroup(1);
        NcclCommunicator rank0 = group.communicator(0, TimeUnit.SECONDS.toNanos(1));
        Drop drop = new Drop(group);
        rank0.holdGraphs(drop);
        closeOnAnotherThread(rank0);
        assertThat(group.closed(0)).as("freed by another thread").isFalse();

        rank0.close();
        assertThat(drop.log).containsExactly(Thread.currentThread().getName() + " aborted=false");
        assertThat(group.closed(0)).isTrue();
    }

    @Test
    void shouldFreeOnAnyThreadOnceTheGraphsAreReleased() throws Exception {
        FakeNcclGroup group = new FakeNcclGroup(1);
        NcclCommunicator rank0 = group.communicator(0, TimeUnit.SECONDS.toNanos(1));
        Drop drop = new Drop(group);
        rank0.holdGraphs(drop);
        drop.run();
        rank0.releaseGraphs(drop);

        closeOnAnotherThread(rank0);
        assertThat(group.closed(0)).isTrue();
    }

    @Test
    void shouldRefuseACaptureOnceFreed() {
        FakeNcclGroup group = new FakeNcclGroup(1);
        NcclCommunicator rank0 = group.communicator(0, TimeUnit.SECONDS.toNanos(1));
        rank0.close();
        assertThatThrownBy(() -> rank0.holdGraphs(() -> {}))
                .isInstanceOf(A2aException.class)
                .hasMessageContaining("no capture");
    }

    private static void closeOnAnotherThread(NcclCommunicator comm) throws InterruptedException {
        Thread.ofPlatform().start(comm::close).join();
    }

    /** Eight bytes to each of two ranks and from each: rank 0's part of a two-rank exchange. */
    static void exchange(NcclCommunicator comm) {
        comm.allToAllV(
                0,
                ExchangePhase.DISPATCH,
                ByteBuffer.allocateDirect(16),
                COUNTS,
                ByteBuffer.allocateDirect(16),
                COUNTS.clone());
    }
}
