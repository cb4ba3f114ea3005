package moe.a2a.comm.tcp;

import io.netty.buffer.ByteBuf;
import java.nio.ByteBuffer;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.ExchangePhase;

/**
 * Where this rank's collective wants each peer's rows: the regions of the receive buffer it posts
 * in the peers' inboxes before it sends (views made once per buffer and phase), and what became of
 * each frame: landed in place, or copied out of Netty's buffers because its peer ran ahead. Owned
 * by the rank thread.
 */
final class ReceiveRegions {
    private final PeerInbox[] inboxes;
    private final PeerViews[] views;
    private long landedBytes;
    private long copiedBytes;

    ReceiveRegions(PeerInbox[] inboxes) {
        this.inboxes = inboxes;
        this.views = new PeerViews[ExchangePhase.values().length];
        for (int i = 0; i < views.length; i++) {
            views[i] = new PeerViews(inboxes.length);
        }
    }

    /**
     * Posts to every peer {@code p} its count, {@code counts[p]} bytes, and its region {@code
     * [offsets[p], offsets[p] + counts[p])} of {@code recv} (to land in when {@code recv} is
     * direct).
     *
     * @throws moe.a2a.comm.PeerFailedException when a frame that ran ahead of this post disagrees
     */
    void post(
            long seq, ExchangePhase phase, ByteBuffer recv, long[] offsets, long[] counts, int me) {
        for (int p = 0; p < inboxes.length; p++) {
            if (p != me) {
                ByteBuf region =
                        recv.isDirect() && counts[p] > 0
                                ? views[phase.ordinal()].region(recv, offsets[p], counts[p])
                                : PeerInbox.NO_PLACE;
                inboxes[p].post(seq, counts[p], region);
            }
        }
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
            throw new A2aException(
                    "all-to-all-v counts disagree: src="
                            + p
                            + ", dst="
                            + me
                            + ", sentBytes="
                            + len
                            + ", expectedBytes="
                            + expected);
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
    }
}
