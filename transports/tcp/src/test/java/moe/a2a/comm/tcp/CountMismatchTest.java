package moe.a2a.comm.tcp;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.PeerFailedException;
import moe.a2a.comm.RankThreads;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A rank that announces one count and sends another: the receiver writes nothing of it, the step
 * fails on every rank, and the receiver names the sender. Timeouts are long, so a failure that
 * names the counts cannot be a timeout.
 */
@Timeout(60)
class CountMismatchTest {
    private static final int ANNOUNCED = 4096;
    private static final int CANARY_BYTES = 4096;
    private static final byte CANARY = 0x5A;
    private static final long TIMEOUT_NS = TimeUnit.SECONDS.toNanos(30);

    @AutoClose static final TcpTransport TRANSPORT = new TcpTransport(2);

    /**
     * Rank 2 announces {@code ANNOUNCED} bytes to rank 0 and sends {@code sentBytes}; ranks 0 and 1
     * are honest.
     */
    @ParameterizedTest(name = "sentBytes={0}")
    @ValueSource(ints = {ANNOUNCED - 1, ANNOUNCED + 1, 12 << 20})
    void shouldFailEveryRankAndNameTheSenderWhenItSendsOtherThanItAnnounced(int sentBytes)
            throws Exception {
        TcpCommunicator[] group = TcpCommunicatorTest.group(TRANSPORT, 3, TIMEOUT_NS);
        ByteBuffer[] recvs = new ByteBuffer[3];
        List<A2aException> failures =
                RankThreads.run(
                        3,
                        rank -> {
                            long[] counts = {ANNOUNCED, ANNOUNCED, ANNOUNCED};
                            long[] recvCounts = new long[3];
                            long[] sendCounts = counts.clone();
                            if (rank == 2) {
                                sendCounts[0] = sentBytes;
                            }
                            ByteBuffer send = rows(rank, 2 * ANNOUNCED + sendCounts[0]);
                            recvs[rank] = canaries(3 * ANNOUNCED + CANARY_BYTES);
                            try {
                                group[rank].allToAllCounts(
                                        0, ExchangePhase.DISPATCH, counts, recvCounts);
                                group[rank].allToAllV(
                                        0,
                                        ExchangePhase.DISPATCH,
                                        send,
                                        sendCounts,
                                        recvs[rank],
                                        recvCounts);
                                // an honest rank may finish the step; the group is broken anyway
                                group[rank].barrier();
                                return null;
                            } catch (A2aException e) {
                                return e;
                            }
                        });
        try {
            assertThat(failures.get(0))
                    .isInstanceOf(PeerFailedException.class)
                    .hasMessageContaining(countsDisagree(sentBytes));
            assertThat(((PeerFailedException) failures.get(0)).peer()).isEqualTo(2);
            for (int rank = 1; rank < 3; rank++) {
                assertThat(failures.get(rank)).as("rank %d", rank).isNotNull();
            }
            assertUntouched(recvs[0], 2 * ANNOUNCED);
        } finally {
            for (TcpCommunicator c : group) {
                c.close();
            }
        }
    }

    /**
     * Rank 1 is a hand-made peer that performs the real handshake, announces {@code ANNOUNCED}
     * bytes, then sends a DATA header claiming {@code sentBytes} and only 100 bytes of it, either
     * after rank 0 has posted its receive (rank 0's own DATA frame has come) or at once, ahead of
     * the post. Rank 0 must fail at the header or at the post: waiting for the payload would end in
     * a timeout.
     */
    @ParameterizedTest(name = "postedFirst={0}, sentBytes={1}")
    @CsvSource({"true, 4095", "true, 4097", "false, 4095", "false, 4097"})
    void shouldFailBeforeThePayloadArrivesWhenTheHeaderDisagrees(boolean postedFirst, int sentBytes)
            throws Exception {
        long groupId = new SplittableRandom(sentBytes).nextLong();
        TcpCommunicator rank0 =
                TcpCommunicator.bind(
                        TRANSPORT,
                        new TcpConfig(
                                0,
                                2,
                                groupId,
                                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                                TIMEOUT_NS,
                                TcpConfig.DEFAULT_MAX_FRAME_BYTES));
        InetSocketAddress address = rank0.localAddress();
        ByteBuffer recv = canaries(2 * ANNOUNCED + CANARY_BYTES);
        try (Socket peer = new Socket(address.getAddress(), address.getPort())) {
            OutputStream out = peer.getOutputStream();
            DataInputStream in = new DataInputStream(peer.getInputStream());
            ByteBuf hello = Unpooled.buffer();
            FrameHeader.write(hello, FrameHeader.HELLO, 0, 0, 0, FrameHeader.HELLO_BYTES);
            write(out, hello.writeLong(groupId).writeInt(1).writeInt(2));
            rank0.connect(List.of(address, address));
            in.readFully(new byte[FrameHeader.BYTES + FrameHeader.HELLO_BYTES]);

            CompletableFuture<Void> step =
                    CompletableFuture.runAsync(
                            () -> {
                                long[] counts = {ANNOUNCED, ANNOUNCED};
                                long[] recvCounts = new long[2];
                                rank0.allToAllCounts(5, ExchangePhase.DISPATCH, counts, recvCounts);
                                rank0.allToAllV(
                                        5,
                                        ExchangePhase.DISPATCH,
                                        rows(0, 2 * ANNOUNCED),
                                        counts,
                                        recv,
                                        recvCounts);
                            });
            ByteBuf frames = Unpooled.buffer();
            FrameHeader.write(frames, FrameHeader.COUNT, 0, 5, 0, Long.BYTES);
            frames.writeLong(ANNOUNCED);
            if (postedFirst) {
                write(out, frames);
                // rank 0 sends its DATA frame only once it has posted its receive
                in.readFully(new byte[FrameHeader.BYTES + Long.BYTES]);
                in.readFully(new byte[FrameHeader.BYTES + ANNOUNCED]);
                frames = Unpooled.buffer();
            }
            FrameHeader.write(frames, FrameHeader.DATA, 0, 5, 1, sentBytes);
            write(out, frames.writeBytes(rows(1, 100)));

            assertThat(step)
                    .failsWithin(TIMEOUT_NS * 2, TimeUnit.NANOSECONDS)
                    .withThrowableOfType(ExecutionException.class)
                    .havingCause()
                    .isInstanceOf(PeerFailedException.class)
                    .withMessageContaining("peer=1")
                    .withMessageContaining(countsDisagree(sentBytes));
            assertUntouched(recv, ANNOUNCED);
            assertThat(rank0.landedBytes() + rank0.copiedBytes()).isZero();
        } finally {
            rank0.close();
        }
    }

    private static String countsDisagree(int sentBytes) {
        return "all-to-all-v counts disagree: op=1, sentBytes="
                + sentBytes
                + ", expectedBytes="
                + ANNOUNCED;
    }

    /** Bytes from {@code from} to the end still hold the canary. */
    private static void assertUntouched(ByteBuffer recv, int from) {
        for (int i = from; i < recv.capacity(); i++) {
            if (recv.get(i) != CANARY) {
                throw new AssertionError(
                        "receive buffer written past the honest rows: byte " + i + " was changed");
            }
        }
    }

    private static ByteBuffer canaries(int bytes) {
        ByteBuffer b = ByteBuffer.allocateDirect(bytes);
        for (int i = 0; i < bytes; i++) {
            b.put(i, CANARY);
        }
        return b;
    }

    /** Seeded rows that never contain the canary byte. */
    private static ByteBuffer rows(int rank, long bytes) {
        SplittableRandom random = new SplittableRandom(rank);
        ByteBuffer b = ByteBuffer.allocateDirect((int) bytes);
        for (int i = 0; i < bytes; i++) {
            b.put(i, (byte) (random.nextInt(1, 256) ^ CANARY));
        }
        return b;
    }

    private static void write(OutputStream out, ByteBuf frame) throws IOException {
        byte[] raw = new byte[frame.readableBytes()];
        frame.readBytes(raw);
        frame.release();
        out.write(raw);
        out.flush();
    }
}
