package moe.a2a.comm.tcp;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.nio.charset.StandardCharsets;
import moe.a2a.comm.PeerFailedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The last handler of an established peer connection: hands frames to the peer's inbox, and turns
 * an ABORT frame, a protocol error (a frame that disagrees with the rank's post among them) or a
 * closed connection into the peer's failure.
 *
 * <pre>
 *   socket ─► FrameDecoder ─► (AcceptHandshake | ConnectHandshake) ─► PeerHandler ─► PeerInbox
 *                                 replaced by PeerHandler once HELLO checks out
 * </pre>
 */
final class PeerHandler extends ChannelInboundHandlerAdapter {
    private static final Logger LOG = LoggerFactory.getLogger(PeerHandler.class);

    private final int rank;
    private final int peer;
    private final PeerInbox inbox;

    PeerHandler(int rank, int peer, PeerInbox inbox) {
        this.rank = rank;
        this.peer = peer;
        this.inbox = inbox;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        Frame frame = (Frame) msg;
        if (frame.kind() == FrameHeader.ABORT) {
            String reason = frame.payload().toString(StandardCharsets.UTF_8);
            frame.release();
            inbox.fail(new PeerFailedException(rank, peer, "aborted by peer: " + reason));
            ctx.close();
            return;
        }
        if (frame.kind() == FrameHeader.HELLO) {
            frame.release();
            exceptionCaught(ctx, new IllegalStateException("HELLO on an established connection"));
            return;
        }
        inbox.offer(frame);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        inbox.fail(new PeerFailedException(rank, peer, "connection closed"));
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        LOG.warn(
                "closing data connection: rank={}, peer={}, remote={}, cause={}",
                rank,
                peer,
                ctx.channel().remoteAddress(),
                cause.toString());
        inbox.fail(
                cause instanceof PeerFailedException failed
                        ? failed
                        : new PeerFailedException(
                                rank, peer, "protocol error: " + cause.getMessage()));
        ctx.close();
    }
}
