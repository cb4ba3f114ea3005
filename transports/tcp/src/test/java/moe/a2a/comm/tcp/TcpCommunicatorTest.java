package moe.a2a.comm.tcp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.PooledByteBufAllocator;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.AbstractCommunicatorTest;
import moe.a2a.comm.CollectiveAlgo;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ExchangeTimeoutException;
import moe.a2a.comm.InboundSink;
import moe.a2a.comm.PeerFailedException;
import moe.a2a.comm.RankThreads;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class TcpCommunicatorTest extends AbstractCommunicatorTest {
    static TcpTransport transport;

    @BeforeAll
    static void startTransport() {
        transport = new TcpTransport(2);
    }

    @AfterAll
    static void stopTransport() {
        transport.close();
    }

    @Override
    protected Communicator[] newGroup(int size, long timeoutNs) throws Exception {
        return group(transport, size, timeoutNs);
    }

    /**
     * Rank 2 comes 200 ms late to every exchange of three: the others count the wait against rank 2
     * in the phase it happened in, and none against each other, whichever order they wait in.
     */
    @Test
    void shouldCountHowLateEachPeerCameIntoTheExchange() throws Exception {
        TcpCommunicator[] group = group(transport, 3, TimeUnit.SECONDS.toNanos(20));
        RankThreads.run(
                3,
                rank -> {
                    ByteBuffer send = ByteBuffer.allocateDirect(3 * 64);
                    ByteBuffer recv = ByteBuffer.allocateDirect(3 * 64);
                    long[] counts = {64, 64, 64};
                    for (int step = 0; step < 3; step++) {
                        if (rank == 2) {
                            pause(200);
                        }
                        long[] recvCounts = new long[3];
                        group[rank].allToAllCounts(
                                step, ExchangePhase.DISPATCH, counts, recvCounts);
                        group[rank].allToAllV(
                                step, ExchangePhase.DISPATCH, send, counts, recv, recvCounts);
                    }
                    return rank;
                });
        for (int r = 0; r < 2; r++) {
            long[] dispatch = group[r].waitedNanos(ExchangePhase.DISPATCH);
            assertThat(dispatch[2])
                    .as("rank %d's wait on rank 2", r)
                    .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(3 * 180));
            assertThat(dispatch[1 - r])
                    .as("rank %d's wait on rank %d, on time", r, 1 - r)
                    .isLessThan(TimeUnit.MILLISECONDS.toNanos(3 * 100));
            assertThat(group[r].waitedNanos(ExchangePhase.COMBINE)).containsOnly(0L);
        }
        assertThat(group[2].waitedNanos(ExchangePhase.DISPATCH)[0])
                .as("the late rank waits on nobody")
                .isLessThan(TimeUnit.MILLISECONDS.toNanos(3 * 100));
        for (TcpCommunicator c : group) {
            c.close();
        }
    }

    /**
     * Rank 1 posts its receive long before rank 0 sends, so rank 0's rows land in place; rank 1's
     * rows reach rank 0 before rank 0 posts. Within the bound of what may run ahead (4 MiB) they
     * arrive whole and take the copying path; beyond it rank 0 stops reading them until it posts,
     * and the rest lands in place. Both arrive intact.
     */
    @ParameterizedTest(name = "bytes={0}")
    @CsvSource({"3145728, true", "12582912, false"})
    void shouldLandRowsWhenPostedFirstAndCopyThemWhenThePeerRanAhead(int bytes, boolean copied)
            throws Exception {
        TcpCommunicator[] group = group(transport, 2, TimeUnit.SECONDS.toNanos(20));
        ByteBuffer[] sent = new ByteBuffer[2];
        SplittableRandom random = new SplittableRandom(42);
        for (int r = 0; r < 2; r++) {
            sent[r] = ByteBuffer.allocateDirect(2 * bytes);
            for (int i = 0; i < 2 * bytes; i++) {
                sent[r].put(i, (byte) random.nextInt());
            }
        }
        CountDownLatch rankOneEntered = new CountDownLatch(1);
        List<ByteBuffer> received =
                RankThreads.run(
                        2,
                        rank -> {
                            ByteBuffer recv = ByteBuffer.allocateDirect(2 * bytes);
                            long[] counts = {bytes, bytes};
                            if (rank == 0) {
                                awaitThenPause(rankOneEntered);
                            } else {
                                rankOneEntered.countDown();
                            }
                            group[rank].allToAllV(
                                    7, ExchangePhase.DISPATCH, sent[rank], counts, recv, counts);
                            return recv;
                        });
        for (int dst = 0; dst < 2; dst++) {
            for (int src = 0; src < 2; src++) {
                assertThat(received.get(dst).slice(src * bytes, bytes))
                        .as("rows from rank %d at rank %d", src, dst)
                        .isEqualTo(sent[src].slice(dst * bytes, bytes));
            }
        }
        assertThat(group[1].landedBytes()).isEqualTo(bytes);
        assertThat(group[1].copiedBytes()).isZero();
        assertThat(group[0].copiedBytes()).isEqualTo(copied ? bytes : 0);
        assertThat(group[0].landedBytes()).isEqualTo(copied ? 0 : bytes);
        for (TcpCommunicator c : group) {
            c.close();
        }
    }

    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static void awaitThenPause(CountDownLatch latch) {
        try {
            latch.await();
            Thread.sleep(300);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /**
     * A receiver that stalls (it never enters the collective): it stops reading once it holds the
     * bound of rows for a collective it has not posted, the rest backs up in the sockets and in the
     * sender's unsent views of its own buffer (nothing is copied), and the sender's collective
     * fails at its deadline naming the stalled rank.
     */
    @Test
    void shouldFailTheSenderNamingAStalledReceiverWithoutBufferingItsRows() throws Exception {
        TcpCommunicator[] group = group(transport, 2, TimeUnit.SECONDS.toNanos(2));
        int bytes = 64 << 20;
        ByteBuffer send = ByteBuffer.allocateDirect(bytes);
        long pooledBefore = PooledByteBufAllocator.DEFAULT.metric().usedDirectMemory();
        try {
            assertThatThrownBy(
                            () ->
                                    group[0].allToAllV(
                                            3,
                                            ExchangePhase.DISPATCH,
                                            send,
                                            new long[] {0, bytes},
                                            ByteBuffer.allocateDirect(0),
                                            new long[] {0, 0}))
                    .isInstanceOfSatisfying(
                            ExchangeTimeoutException.class,
                            e -> assertThat(e.peer()).as("the stalled rank").isEqualTo(1));
            long held = PooledByteBufAllocator.DEFAULT.metric().usedDirectMemory() - pooledBefore;
            assertThat(held)
                    .as(
                            "pooled memory held for the stalled rank's unposted rows, of %d sent",
                            bytes)
                    .isLessThan(16L << 20);
        } finally {
            for (TcpCommunicator c : group) {
                c.close();
            }
        }
    }

    /**
     * Rank 0 sends 16 bytes where rank 1 expects 12, after rank 1 posted its receive or before:
     * rank 1 fails naming rank 0 and both lengths, at the header or at its post, with nothing
     * written where the message was to go, whether its sink names that place or not; rank 0 learns
     * of it at its next call.
     */
    @ParameterizedTest(name = "postedFirst={0}, copySink={1}")
    @CsvSource({"true, true", "true, false", "false, true", "false, false"})
    void shouldFailNamingThePeerWithoutWritingWhenAMessageHasAnotherLength(
            boolean postedFirst, boolean copySink) throws Exception {
        TcpCommunicator[] group = group(transport, 2, TimeUnit.SECONDS.toNanos(20));
        ByteBuffer recv = ByteBuffer.allocateDirect(64);
        for (int i = 0; i < recv.capacity(); i++) {
            recv.put(i, (byte) 0x5A);
        }
        AtomicInteger sinkCalls = new AtomicInteger();
        InboundSink sink =
                copySink
                        ? InboundSink.copyTo(recv, 8)
                        : (src, at, bytes) -> {
                            sinkCalls.incrementAndGet();
                            recv.put(8, src, at, bytes);
                        };
        CountDownLatch first = new CountDownLatch(1);
        try {
            List<Throwable> failures =
                    RankThreads.run(
                            2,
                            rank -> {
                                try {
                                    if (rank == 0) {
                                        if (postedFirst) {
                                            awaitThenPause(first);
                                        }
                                        group[0].send(1, ByteBuffer.allocateDirect(16), 0, 16);
                                        first.countDown();
                                        group[0].barrier();
                                    } else {
                                        if (!postedFirst) {
                                            awaitThenPause(first);
                                        }
                                        first.countDown();
                                        group[1].sendRecv(
                                                Communicator.NONE, null, 0, 0, 0, 12, sink);
                                    }
                                    return null;
                                } catch (A2aException e) {
                                    return e;
                                }
                            });
            assertThat(failures.get(1))
                    .isInstanceOfSatisfying(
                            PeerFailedException.class,
                            e -> assertThat(e.peer()).as("the sender").isZero())
                    .hasMessageContaining(
                            "point-to-point lengths disagree: op=0, sentBytes=16,"
                                    + " expectedBytes=12");
            assertThat(failures.get(0)).as("the sender, at its next call").isNotNull();
            for (int i = 0; i < recv.capacity(); i++) {
                assertThat(recv.get(i)).as("byte %d", i).isEqualTo((byte) 0x5A);
            }
            assertThat(sinkCalls).hasValue(0);
            assertThat(group[1].landedBytes() + group[1].copiedBytes()).isZero();
        } finally {
            for (TcpCommunicator c : group) {
                c.close();
            }
        }
    }

    /**
     * Ranks 0 and 1 exchange messages the others never see (rank 0 runs several ahead, small and
     * larger than the bound on what is buffered for a rank that has not posted), then every rank
     * runs full collectives, then ranks 1 and 2 exchange messages, and again: every pair's sequence
     * numbers stay in step, and every byte arrives.
     */
    @Test
    void shouldKeepSequencesInStepWhenMessagesBetweenTwoRanksInterleaveWithCollectives()
            throws Exception {
        interleaveMessagesWithCollectives(group(transport, 3, TimeUnit.SECONDS.toNanos(20)));
    }

    /** The exchanges of the test above, over {@code group} of three ranks, which it closes. */
    static void interleaveMessagesWithCollectives(TcpCommunicator[] group) throws Exception {
        final int n = group.length;
        final int small = 20;
        final int large = 3 << 20;
        final int elements = 100_003;
        try {
            List<Boolean> ok =
                    RankThreads.run(
                            n,
                            rank -> {
                                TcpCommunicator comm = group[rank];
                                for (int round = 0; round < 2; round++) {
                                    int a = round;
                                    int b = round + 1;
                                    if (rank == a) {
                                        for (int m = 0; m < small; m++) {
                                            comm.send(b, message(a, m, 10 + m), 0, 10 + m);
                                        }
                                        for (int m = 0; m < 3; m++) {
                                            comm.send(b, message(a, m, large), 0, large);
                                        }
                                    } else if (rank == b) {
                                        pause();
                                        for (int m = 0; m < small; m++) {
                                            expectMessage(comm, a, m, 10 + m);
                                        }
                                        for (int m = 0; m < 3; m++) {
                                            expectMessage(comm, a, m, large);
                                        }
                                    }
                                    allToAllVAndCheck(comm, rank, n, round);
                                    ByteBuffer sum =
                                            ByteBuffer.allocateDirect(4 * elements)
                                                    .order(ByteOrder.LITTLE_ENDIAN);
                                    for (int i = 0; i < elements; i++) {
                                        sum.putFloat(4 * i, rank + i % 7);
                                    }
                                    comm.allReduce(
                                            sum,
                                            sum,
                                            elements,
                                            DType.FP32,
                                            ReduceOp.SUM,
                                            CollectiveAlgo.RING);
                                    for (int i = 0; i < elements; i++) {
                                        float expected = 3 + 3 * (i % 7);
                                        if (sum.getFloat(4 * i) != expected) {
                                            throw new AssertionError(
                                                    "rank=" + rank + " round=" + round + " i=" + i);
                                        }
                                    }
                                }
                                comm.barrier();
                                return true;
                            });
            assertThat(ok).containsOnly(true);
        } finally {
            for (TcpCommunicator c : group) {
                c.close();
            }
        }
    }

    private static void allToAllVAndCheck(TcpCommunicator comm, int rank, int n, int round) {
        long[] send = new long[n];
        long[] recv = new long[n];
        for (int p = 0; p < n; p++) {
            send[p] = 1000L * (rank + 1) + 10L * p + round;
        }
        comm.allToAllCounts(round, ExchangePhase.DISPATCH, send, recv);
        long sendTotal = 0;
        long recvTotal = 0;
        for (int p = 0; p < n; p++) {
            sendTotal += send[p];
            recvTotal += recv[p];
        }
        ByteBuffer sendBuf = ByteBuffer.allocateDirect((int) sendTotal);
        long at = 0;
        for (int p = 0; p < n; p++) {
            for (int i = 0; i < send[p]; i++) {
                sendBuf.put((int) at + i, (byte) (rank * 31 + p * 7 + i + round));
            }
            at += send[p];
        }
        ByteBuffer recvBuf = ByteBuffer.allocateDirect((int) recvTotal);
        comm.allToAllV(round, ExchangePhase.DISPATCH, sendBuf, send, recvBuf, recv);
        at = 0;
        for (int p = 0; p < n; p++) {
            for (int i = 0; i < recv[p]; i++) {
                if (recvBuf.get((int) at + i) != (byte) (p * 31 + rank * 7 + i + round)) {
                    throw new AssertionError("rank=" + rank + " src=" + p + " byte=" + i);
                }
            }
            at += recv[p];
        }
    }

    private static ByteBuffer message(int src, int m, int bytes) {
        ByteBuffer b = ByteBuffer.allocateDirect(bytes);
        for (int i = 0; i < bytes; i++) {
            b.put(i, (byte) (src * 13 + m * 5 + i));
        }
        return b;
    }

    private static void expectMessage(Communicator comm, int src, int m, int bytes) {
        ByteBuffer got = ByteBuffer.allocateDirect(bytes);
        comm.recv(src, got, 0, bytes);
        if (!got.equals(message(src, m, bytes))) {
            throw new AssertionError("message " + m + " from " + src + " of " + bytes + " bytes");
        }
    }

    private static void pause() {
        try {
            Thread.sleep(300);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** {@code size} ranks on loopback, connected to each other. */
    static TcpCommunicator[] group(TcpTransport transport, int size, long timeoutNs)
            throws Exception {
        return group(transport, size, timeoutNs, rank -> null);
    }

    /** {@code size} ranks on loopback, each with {@code tls.apply(rank)}, connected. */
    static TcpCommunicator[] group(
            TcpTransport transport,
            int size,
            long timeoutNs,
            java.util.function.IntFunction<DataPlaneTls> tls)
            throws Exception {
        long groupId = ThreadLocalRandom.current().nextLong();
        TcpCommunicator[] comms = new TcpCommunicator[size];
        List<InetSocketAddress> addresses = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            comms[r] =
                    TcpCommunicator.bind(
                            transport,
                            new TcpConfig(
                                    r,
                                    size,
                                    groupId,
                                    new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                                    timeoutNs,
                                    TcpConfig.DEFAULT_MAX_FRAME_BYTES,
                                    tls.apply(r)));
            addresses.add(comms[r].localAddress());
        }
        RankThreads.run(
                size,
                rank -> {
                    comms[rank].connect(addresses);
                    return rank;
                });
        return comms;
    }
}
