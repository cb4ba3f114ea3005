package moe.a2a.comm.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;

/**
 * Netty views of the buffer a rank passes to its collectives for one phase, made when the rank
 * passes a buffer it did not pass last time and reused otherwise: sending a peer its rows wraps
 * nothing new. Every view shares the reference count of one wrapper, which {@link #release} drops.
 * Owned by the rank thread.
 */
final class PeerViews {
    private final ByteBuf[] perPeer;
    private ByteBuffer source;
    private ByteBuf whole;

    PeerViews(int peers) {
        this.perPeer = new ByteBuf[peers];
    }

    /**
     * Bytes {@code [offset, offset + length)} of {@code buffer}, in the view kept for {@code peer}.
     */
    ByteBuf rows(ByteBuffer buffer, int peer, long offset, long length) {
        refresh(buffer);
        return perPeer[peer].setIndex((int) offset, (int) (offset + length));
    }

    /**
     * An empty view of bytes {@code [offset, offset + length)} of {@code buffer} that ends where
     * they end, for the socket to read into.
     */
    ByteBuf region(ByteBuffer buffer, long offset, long length) {
        refresh(buffer);
        return whole.slice((int) offset, (int) length).clear();
    }

    void release() {
        if (whole != null) {
            whole.release();
            whole = null;
            source = null;
        }
    }

    private void refresh(ByteBuffer buffer) {
        if (buffer == source) {
            return;
        }
        release();
        source = buffer;
        whole = Unpooled.wrappedBuffer(buffer.duplicate().clear());
        for (int p = 0; p < perPeer.length; p++) {
            perPeer[p] = whole.duplicate();
        }
    }
}
