package moe.a2a.comm.tcp;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.util.concurrent.TimeUnit;

/**
 * The Netty event loops shared by the TCP communicators of one process: the native epoll transport
 * where it loads, NIO otherwise ({@link #description()} says which and why). Thread-safe.
 */
public final class TcpTransport implements AutoCloseable {
    private final EventLoopGroup group;
    private final boolean epoll;
    private final String description;

    public TcpTransport(int threads) {
        this.epoll = Epoll.isAvailable();
        IoHandlerFactory factory = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
        this.group = new MultiThreadIoEventLoopGroup(threads, factory);
        this.description =
                epoll ? "epoll" : "nio (epoll unavailable: " + Epoll.unavailabilityCause() + ")";
    }

    /** {@code epoll}, or {@code nio (...)} with the reason epoll did not load. */
    public String description() {
        return description;
    }

    EventLoopGroup group() {
        return group;
    }

    Class<? extends SocketChannel> socketChannel() {
        return epoll ? EpollSocketChannel.class : NioSocketChannel.class;
    }

    Class<? extends ServerChannel> serverChannel() {
        return epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
    }

    @Override
    public void close() {
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }
}
