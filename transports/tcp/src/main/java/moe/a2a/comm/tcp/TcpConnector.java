package moe.a2a.comm.tcp;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.socket.SocketChannel;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.PeerFailedException;

/**
 * Sets up one rank's connections: the listening socket that higher ranks connect to, the
 * connections to lower ranks (retried until the deadline), and every connection's pipeline (TLS
 * when the group has it, frames, then the {@link Handshake}).
 *
 * <p>Used by the thread that binds and connects; the pipelines are set up on the event loops.
 */
final class TcpConnector {
    /**
     * Socket buffers large enough that one rank's rows for a peer move in few system calls; also
     * how much of a frame that ran ahead of its post is buffered before its connection is held.
     */
    private static final int SOCKET_BUFFER_BYTES = 4 << 20;

    private final TcpCommunicator comm;
    private final TcpTransport transport;
    private final TcpConfig config;

    TcpConnector(TcpCommunicator comm, TcpTransport transport, TcpConfig config) {
        this.comm = comm;
        this.transport = transport;
        this.config = config;
    }

    /** Starts listening on {@code config.bindAddress()} (port 0 picks a free port). */
    Channel listen() {
        return new ServerBootstrap()
                .group(transport.group())
                .channel(transport.serverChannel())
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.SO_RCVBUF, SOCKET_BUFFER_BYTES)
                .childOption(ChannelOption.SO_SNDBUF, SOCKET_BUFFER_BYTES)
                .childHandler(
                        new ChannelInitializer<SocketChannel>() {
                            @Override
                            protected void initChannel(SocketChannel ch) {
                                initDataChannel(ch, -1);
                            }
                        })
                .bind(config.bindAddress())
                .syncUninterruptibly()
                .channel();
    }

    /** Connects to {@code peer}, retrying every 50 ms until {@code deadline}. */
    void connectTo(int peer, InetSocketAddress address, long deadline) {
        Bootstrap bootstrap =
                new Bootstrap()
                        .group(transport.group())
                        .channel(transport.socketChannel())
                        .option(ChannelOption.TCP_NODELAY, true)
                        .option(ChannelOption.SO_RCVBUF, SOCKET_BUFFER_BYTES)
                        .option(ChannelOption.SO_SNDBUF, SOCKET_BUFFER_BYTES)
                        .handler(
                                new ChannelInitializer<SocketChannel>() {
                                    @Override
                                    protected void initChannel(SocketChannel ch) {
                                        initDataChannel(ch, peer);
                                    }
                                });
        while (true) {
            // a peer behind a packet filter never answers: no attempt may outlast the deadline
            long leftMs = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            bootstrap.option(ChannelOption.CONNECT_TIMEOUT_MILLIS, Math.clamp(leftMs, 50, 30_000));
            ChannelFuture f = bootstrap.connect(address).awaitUninterruptibly();
            if (f.isSuccess()) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw PeerFailedException.unreachable(
                        config.rank(), peer, "cannot connect to " + address + ": " + f.cause());
            }
            sleepMillis(50);
        }
    }

    /**
     * TLS when the group has it, frames, then the handshake. Plaintext reads land in posted receive
     * regions where they can; under TLS the socket reads ciphertext, so decrypted rows are copied
     * there instead.
     */
    private void initDataChannel(SocketChannel ch, int expectedPeer) {
        FrameDecoder frames = new FrameDecoder(config.maxFrameBytes(), SOCKET_BUFFER_BYTES);
        DataPlaneTls tls = config.tls();
        if (tls == null) {
            ch.config().setRecvByteBufAllocator(new LandingAllocator(readSizes(), frames));
        } else {
            ch.config().setRecvByteBufAllocator(readSizes());
            ch.pipeline().addLast("tls", tls.handler(ch, expectedPeer < 0));
        }
        ch.pipeline()
                .addLast("frames", frames)
                .addLast("handshake", new Handshake(comm, expectedPeer));
    }

    /** Reads grow up to 1 MiB per call when rows stream in, instead of Netty's 64 KiB. */
    private static AdaptiveRecvByteBufAllocator readSizes() {
        return new AdaptiveRecvByteBufAllocator(64, 64 << 10, 1 << 20);
    }

    private static void sleepMillis(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new A2aException("interrupted while connecting", e);
        }
    }
}
