package moe.a2a.comm.tcp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.RankThreads;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Traffic from outside the group is dropped without disturbing the group's exchanges. */
@Timeout(60)
class HostileTrafficTest {
    TcpTransport transport;
    TcpCommunicator[] group;

    @BeforeEach
    void formGroup() throws Exception {
        transport = new TcpTransport(1);
        group = TcpCommunicatorTest.group(transport, 2, TimeUnit.SECONDS.toNanos(2));
    }

    @AfterEach
    void close() {
        for (TcpCommunicator c : group) {
            c.close();
        }
        transport.close();
    }

    @Test
    void shouldDropGarbageBytes() throws Exception {
        assertClosedAfterSending(
                Unpooled.wrappedBuffer(
                        "\u0000\u0001garbage garbage garbage".getBytes(StandardCharsets.US_ASCII)));
        assertGroupStillExchanges();
    }

    @Test
    void shouldDropFrameClaimingTenGigabytes() throws Exception {
        ByteBuf frame = Unpooled.buffer();
        FrameHeader.write(frame, FrameHeader.DATA, 0, 0, 0, 10_000_000_000L);
        assertClosedAfterSending(frame);
        assertGroupStillExchanges();
    }

    @Test
    void shouldHangUpAtTheHeaderWhenAStrangerClaimsTwoGigabytes() throws Exception {
        ByteBuf header = Unpooled.buffer();
        FrameHeader.write(header, FrameHeader.DATA, 0, 0, 0, Integer.MAX_VALUE);
        byte[] raw = new byte[header.readableBytes()];
        header.readBytes(raw);
        InetSocketAddress address = group[0].localAddress();
        try (Socket socket = new Socket(address.getAddress(), address.getPort())) {
            socket.getOutputStream().write(raw);
            byte[] chunk = new byte[1 << 20];
            // rank 0 would buffer these while it waits for a HELLO; it must hang up instead
            assertThatThrownBy(
                            () -> {
                                for (int i = 0; i < 256; i++) {
                                    socket.getOutputStream().write(chunk);
                                }
                            })
                    .as("256 MiB after a DATA header from a stranger")
                    .isInstanceOf(IOException.class);
        }
        assertGroupStillExchanges();
    }

    @Test
    void shouldDropHelloFromAnotherGroup() throws Exception {
        assertClosedAfterSending(hello(group[0].config().groupId() + 1, 1));
        assertGroupStillExchanges();
    }

    @Test
    void shouldDropSecondConnectionClaimingAMembersRank() throws Exception {
        assertClosedAfterSending(hello(group[0].config().groupId(), 1));
        assertGroupStillExchanges();
    }

    @Test
    void shouldDropSilentConnectionAfterTimeout() throws Exception {
        assertClosedAfterSending(Unpooled.EMPTY_BUFFER);
        assertGroupStillExchanges();
    }

    private static ByteBuf hello(long groupId, int rank) {
        ByteBuf out = Unpooled.buffer();
        FrameHeader.write(out, FrameHeader.HELLO, 0, 0, 0, FrameHeader.HELLO_BYTES);
        return out.writeLong(groupId).writeInt(rank).writeInt(2);
    }

    /** Sends {@code bytes} to rank 0's data port and expects rank 0 to hang up. */
    private void assertClosedAfterSending(ByteBuf bytes) throws Exception {
        InetSocketAddress address = group[0].localAddress();
        try (Socket socket = new Socket(address.getAddress(), address.getPort())) {
            socket.setSoTimeout(10_000);
            byte[] raw = new byte[bytes.readableBytes()];
            bytes.readBytes(raw);
            socket.getOutputStream().write(raw);
            socket.getOutputStream().flush();
            InputStream in = socket.getInputStream();
            int read;
            try {
                read = in.read();
            } catch (SocketException reset) {
                read = -1;
            }
            assertThat(read).as("rank 0 should close the connection").isEqualTo(-1);
        }
    }

    private void assertGroupStillExchanges() throws Exception {
        RankThreads.run(
                2,
                rank -> {
                    ByteBuffer send = ByteBuffer.allocateDirect(8).order(ByteOrder.LITTLE_ENDIAN);
                    send.putInt(0, rank * 10).putInt(4, rank * 10 + 1);
                    ByteBuffer recv = ByteBuffer.allocateDirect(8).order(ByteOrder.LITTLE_ENDIAN);
                    group[rank].allToAllV(
                            0,
                            ExchangePhase.DISPATCH,
                            send,
                            new long[] {4, 4},
                            recv,
                            new long[] {4, 4});
                    assertThat(recv.getInt(0)).isEqualTo(rank);
                    assertThat(recv.getInt(4)).isEqualTo(10 + rank);
                    return rank;
                });
    }
}
