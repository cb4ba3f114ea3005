package moe.a2a.comm.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.TooLongFrameException;

/**
 * Splits the byte stream into {@link Frame}s. A frame of rows (a collective's DATA or a
 * point-to-point SEND) whose place the rank has posted ({@link PeerInbox#claim}) lands there: the
 * socket reads the rows straight into it through {@link LandingAllocator}, and bytes that came in
 * one read with the header are copied over. A frame of rows whose kind or length is not the posted
 * one fails the peer at its header: none of its bytes is buffered or written. Any other payload is
 * not copied: the socket's buffers are sliced and gathered into a composite buffer, which the rank
 * copies once into its receive buffer.
 *
 * <p>A frame of rows that starts before its post (the peer ran ahead) is buffered up to {@code
 * aheadBytes}; once it is complete or that much has come, the connection is not read again until
 * the rank posts that frame and its length checks out ({@link PeerInbox#hold}). The count that
 * would bound the frame exactly is not known here before the post: COUNT frames carry the caller's
 * units (rows), not bytes. So a peer ahead of this rank gets at most {@code aheadBytes} plus one
 * read buffered (frames that end within that read included), and TCP's flow control keeps the rest
 * at the peer, whose writes wait for this rank's reads.
 *
 * <p>A bad magic, an unknown kind, a length over the limit, or any frame but HELLO before the
 * handshake is an exception (the connection is then closed), so an unknown peer never gets more
 * than a HELLO buffered. One per channel.
 */
final class FrameDecoder extends ChannelInboundHandlerAdapter {
    private final long maxFrameBytes;
    private final long aheadBytes;
    private ByteBuf header;
    private CompositeByteBuf payload;
    private PeerInbox inbox;

    /** The posted region the current frame of rows lands in; its writer index is what landed. */
    private ByteBuf landing;

    /** Whether the current frame of rows was checked against the rank's post. */
    private boolean matchesPost;

    private byte kind;
    private int phase;
    private long step;
    private long op;
    private long remaining = -1;

    /**
     * @param maxFrameBytes frames of rows claiming more fail at their header
     * @param aheadBytes how much of a frame of rows that started before its post is buffered before
     *     the connection is held
     */
    FrameDecoder(long maxFrameBytes, long aheadBytes) {
        this.maxFrameBytes = maxFrameBytes;
        this.aheadBytes = aheadBytes;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        header = ctx.alloc().buffer(FrameHeader.BYTES);
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        header.release();
        if (payload != null) {
            payload.release();
            payload = null;
        }
        if (landing != null) {
            landing.release();
            landing = null;
        }
    }

    /**
     * From the handshake on, frames of rows may land in the places the rank posts in {@code inbox}.
     */
    void landIn(PeerInbox inbox) {
        this.inbox = inbox;
    }

    /**
     * The rest of the current frame of rows' posted region, for the socket to read into (retained
     * for the read), or null when the next bytes have no posted place.
     */
    ByteBuf landingBuffer() {
        if (remaining <= 0) {
            return null;
        }
        if (isAhead()) {
            claimLate();
        }
        return landing == null ? null : landing.readerIndex(landing.writerIndex()).retain();
    }

    /**
     * The frame started before the rank posted its place (the peer ran ahead): if the place is
     * posted now, what came so far is copied there and the rest lands.
     */
    private void claimLate() {
        ByteBuf region = inbox.claim(kind, op, payload.readableBytes() + remaining);
        if (region == null) {
            return;
        }
        matchesPost = true;
        if (region != PeerInbox.NO_PLACE) {
            landing = region.writeBytes(payload);
            payload.release();
            payload = null;
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        ByteBuf in = (ByteBuf) msg;
        try {
            if (in == landing) {
                remaining -= in.readableBytes();
                if (remaining == 0) {
                    completeFrame(ctx);
                }
                return;
            }
            while (in.isReadable()) {
                if (remaining < 0) {
                    int take =
                            Math.min(
                                    in.readableBytes(), FrameHeader.BYTES - header.readableBytes());
                    header.writeBytes(in, take);
                    if (header.readableBytes() == FrameHeader.BYTES) {
                        startFrame(ctx);
                    }
                } else if (landing != null) {
                    int take = (int) Math.min(in.readableBytes(), remaining);
                    landing.writeBytes(in, take);
                    remaining -= take;
                } else {
                    int take = (int) Math.min(in.readableBytes(), remaining);
                    payload.addComponent(true, in.readRetainedSlice(take));
                    remaining -= take;
                }
                if (remaining == 0) {
                    completeFrame(ctx);
                }
            }
            if (remaining > 0 && isAhead() && payload.readableBytes() >= aheadBytes) {
                inbox.hold(op, ctx.channel());
            }
        } finally {
            in.release();
        }
    }

    /** The current frame carries rows, started before its post and has no place yet. */
    private boolean isAhead() {
        return FrameHeader.carriesRows(kind) && !matchesPost && inbox != null;
    }

    private void completeFrame(ChannelHandlerContext ctx) {
        if (isAhead()) {
            inbox.hold(op, ctx.channel());
        }
        Frame frame;
        if (landing != null) {
            frame = new Frame(kind, phase, step, op, Unpooled.EMPTY_BUFFER, true);
            landing.release();
            landing = null;
        } else {
            frame = new Frame(kind, phase, step, op, payload);
            payload = null;
        }
        remaining = -1;
        ctx.fireChannelRead(frame);
    }

    private void startFrame(ChannelHandlerContext ctx) {
        int magic = header.readInt();
        kind = header.readByte();
        phase = header.readUnsignedByte();
        header.skipBytes(2);
        step = header.readLong();
        op = header.readLong();
        long length = header.readLong();
        header.clear();
        if (magic != FrameHeader.MAGIC) {
            throw new CorruptedFrameException(
                    "bad frame magic: magic=0x"
                            + Integer.toHexString(magic)
                            + " (expected: 0x"
                            + Integer.toHexString(FrameHeader.MAGIC)
                            + ")");
        }
        if (inbox == null && kind != FrameHeader.HELLO) {
            // nothing is buffered for a connection that has not said who it is
            throw new CorruptedFrameException(
                    "a "
                            + FrameHeader.kindName(kind)
                            + " frame before the handshake (expected: HELLO)");
        }
        long limit;
        switch (kind) {
            case FrameHeader.HELLO:
                limit = FrameHeader.HELLO_BYTES;
                break;
            case FrameHeader.COUNT:
                limit = Long.BYTES;
                break;
            case FrameHeader.DATA:
            case FrameHeader.SEND:
                limit = maxFrameBytes;
                break;
            case FrameHeader.ABORT:
                limit = FrameHeader.MAX_ABORT_BYTES;
                break;
            default:
                throw new CorruptedFrameException("unknown frame kind: kind=" + kind);
        }
        if (length < 0 || length > limit) {
            throw new TooLongFrameException(
                    "frame length out of range: kind="
                            + FrameHeader.kindName(kind)
                            + ", length="
                            + length
                            + " (expected: in [0, "
                            + limit
                            + "])");
        }
        ByteBuf region =
                FrameHeader.carriesRows(kind) && inbox != null
                        ? inbox.claim(kind, op, length)
                        : null;
        matchesPost = region != null;
        landing = region == PeerInbox.NO_PLACE ? null : region;
        remaining = length;
        if (landing == null) {
            payload = ctx.alloc().compositeDirectBuffer(Integer.MAX_VALUE);
        }
    }
}
