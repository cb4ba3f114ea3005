package moe.a2a.comm.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The first exchange on a data connection: the connecting rank (the higher one) sends HELLO with
 * the group id, its rank and the world size; the accepting rank checks them and answers with its
 * own HELLO, which the connecting rank checks in turn. Anything else (garbage, a foreign group, a
 * duplicate rank, silence past the timeout) is logged and the connection closed; the group is not
 * affected. One per connection, replaced by a {@link PeerHandler} on success.
 */
final class Handshake extends ChannelInboundHandlerAdapter {
    private static final Logger LOG = LoggerFactory.getLogger(Handshake.class);

    private final TcpCommunicator comm;

    /** The rank this side connected to, or -1 on the accepting side. */
    private final int expectedPeer;

    private ScheduledFuture<?> timeout;

    Handshake(TcpCommunicator comm, int expectedPeer) {
        this.comm = comm;
        this.expectedPeer = expectedPeer;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        timeout =
                ctx.executor()
                        .schedule(
                                () -> refuse(ctx, "no HELLO within the timeout"),
                                comm.config().timeoutNs(),
                                TimeUnit.NANOSECONDS);
        if (expectedPeer >= 0) {
            ctx.writeAndFlush(hello(ctx));
        }
        ctx.fireChannelActive();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        Frame frame = (Frame) msg;
        try {
            if (frame.kind() != FrameHeader.HELLO) {
                refuse(
                        ctx,
                        "first frame is "
                                + FrameHeader.kindName(frame.kind())
                                + " (expected: HELLO)");
                return;
            }
            ByteBuf p = frame.payload();
            long groupId = p.readLong();
            int peer = p.readInt();
            int size = p.readInt();
            TcpConfig config = comm.config();
            if (groupId != config.groupId() || size != config.size()) {
                refuse(ctx, "not a member: groupId=" + groupId + ", size=" + size);
                return;
            }
            boolean accepting = expectedPeer < 0;
            if (accepting ? peer <= config.rank() || peer >= size : peer != expectedPeer) {
                refuse(ctx, "unexpected rank: peer=" + peer + " (this rank=" + config.rank() + ")");
                return;
            }
            if (!comm.registerPeer(peer, ctx.channel())) {
                refuse(ctx, "duplicate connection: peer=" + peer);
                return;
            }
            timeout.cancel(false);
            ctx.pipeline()
                    .replace(this, "peer", new PeerHandler(config.rank(), peer, comm.inbox(peer)));
            ctx.pipeline().get(FrameDecoder.class).landIn(comm.inbox(peer));
            if (accepting) {
                ctx.writeAndFlush(hello(ctx));
            }
        } finally {
            frame.release();
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        refuse(ctx, cause.getMessage());
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (timeout != null) {
            timeout.cancel(false);
        }
        ctx.fireChannelInactive();
    }

    private void refuse(ChannelHandlerContext ctx, String reason) {
        Channel ch = ctx.channel();
        if (ch.isOpen()) {
            LOG.warn(
                    "refused data connection: rank={}, remote={}, reason={}",
                    comm.config().rank(),
                    ch.remoteAddress(),
                    reason);
            ch.close();
        }
    }

    private ByteBuf hello(ChannelHandlerContext ctx) {
        TcpConfig config = comm.config();
        ByteBuf out = ctx.alloc().buffer(FrameHeader.BYTES + FrameHeader.HELLO_BYTES);
        FrameHeader.write(out, FrameHeader.HELLO, 0, 0, 0, FrameHeader.HELLO_BYTES);
        return out.writeLong(config.groupId()).writeInt(config.rank()).writeInt(config.size());
    }
}
