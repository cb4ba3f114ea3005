package moe.a2a.comm.tcp;

import io.netty.buffer.ByteBuf;
import java.nio.ByteBuffer;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.ExchangeErrors;
import moe.a2a.comm.ExchangePhase;

/**
 * Where this rank's collective wants each peer's rows, or its point-to-point receive the message:
 * the regions of the receive buffer it posts in the peers' inboxes before it sends (views made once
 * per buffer and phase, and for messages), and what became of each frame: landed in place, or
 * copied out of Netty's buffers because its peer ran ahead. Owned by the rank thread.
 */
final class ReceiveRegions {
    private final PeerInbox[] inboxes;
    private final PeerViews[] views;
    private final PeerViews messageViews;
    private long landedBytes;
    private long copiedBytes;

    ReceiveRegions(PeerInbox[] inboxes) {
        this.inboxes = inboxes;
        this.views = new PeerViews[ExchangePhase.values().length];
        for (int i = 0; i < views.length; i++) {
            views[i] = new PeerViews(inboxes.length);
        }
        this.messageViews = new PeerViews(inboxes.length);
    }

    /**
     * Posts to every peer {@code p} that its DATA frame {@code ops[p]} holds {@code counts[p]}
     * bytes, and its region {@code [offsets[p], offsets[p] + counts[p])} of {@code recv} (to land
     * in when {@code recv} is direct).
     *
     * @throws moe.a2a.comm.PeerFailedException when a frame that ran ahead of this post disagrees
     */
    void post(
            long[] ops,
            ExchangePhase phase,
            ByteBuffer recv,
            long[] offsets,
            long[] counts,
            int me) {
        for (int p = 0; p < inboxes.length; p++) {
            if (p != me) {
                ByteBuf region =
                        recv.isDirect() && counts[p] > 0
                                ? views[phase.ordinal()].region(recv, offsets[p], counts[p])
                                : PeerInbox.NO_PLACE;
                inboxes[p].post(FrameHeader.DATA, ops[p], counts[p], region);
            }
        }
    }

    /**
     * Posts to {@code peer} that its SEND frame {@code op} holds {@code bytes} bytes, which land in
     * {@code dst} at {@code offset} when {@code dst} is direct.
     *
     * @throws moe.a2a.comm.PeerFailedException when a frame that ran ahead of this post disagrees
     */
    void postMessage(int peer, long op, ByteBuffer dst, int offset, int bytes) {
        ByteBuf region =
                dst.isDirect() && bytes > 0
                        ? messageViews.region(dst, offset, bytes)
                        : PeerInbox.NO_PLACE;
        inboxes[peer].post(FrameHeader.SEND, op, bytes, region);
    }

    /**
     * Accounts for {@code peer}'s SEND frame: a message that landed is in place; another is copied
     * into {@code dst} at {@code offset}.
     *
     * @throws A2aException when the frame's length is not the {@code expected} one
     */
    void takeMessage(Frame frame, int peer, int me, ByteBuffer dst, int offset, int expected) {
        inboxes[peer].unpost();
        if (frame.landed()) {
            landedBytes += expected;
            return;
        }
        ByteBuf payload = frame.payload();
        int len = payload.readableBytes();
        if (len != expected) {
            throw ExchangeErrors.lengthMismatch(peer, me, len, expected);
        }
        payload.getBytes(payload.readerIndex(), dst.slice(offset, len));
        copiedBytes += expected;
    }

    /** Withdraws every region the event loops have not claimed. */
    void withdrawAll() {
        for (PeerInbox inbox : inboxes) {
            inbox.unpost();
        }
    }

    /**
     * Accounts for peer {@code p}'s frame: rows that landed are in place; others are copied into
     * {@code recv} at {@code offset}.
     *
     * @throws A2aException when the frame's length is not the {@code expected} count
     */
    void take(Frame frame, int p, int me, ByteBuffer recv, long offset, long expected) {
        inboxes[p].unpost();
        if (frame.landed()) {
            landedBytes += expected;
            return;
        }
        ByteBuf payload = frame.payload();
        int len = payload.readableBytes();
        if (len != expected) {
            throw ExchangeErrors.countMismatch(p, me, len, expected);
        }
        payload.getBytes(payload.readerIndex(), recv.slice((int) offset, len));
        copiedBytes += expected;
    }

    long landedBytes() {
        return landedBytes;
    }

    long copiedBytes() {
        return copiedBytes;
    }

    void release() {
        for (PeerViews v : views) {
            v.release();
        }
        messageViews.release();
    }
}
