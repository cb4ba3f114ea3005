package moe.a2a.comm.tcp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.PooledByteBufAllocator;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.AbstractCommunicatorTest;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ExchangeTimeoutException;
import moe.a2a.comm.RankThreads;
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
