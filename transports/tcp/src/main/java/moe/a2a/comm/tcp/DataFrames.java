package moe.a2a.comm.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import java.nio.ByteBuffer;
import moe.a2a.comm.ExchangePhase;

/**
 * This rank's outgoing DATA and SEND frames: per peer one header buffer, and per phase (and for
 * point-to-point messages) and peer one view of the caller's buffer (made again only when the
 * caller passes another buffer), written without copying the rows. Each write is remembered until
 * the collective has waited for it, so a header or view is reused only once its previous write is
 * done. Owned by the rank thread.
 */
final class DataFrames {
    private final Channel[] peers;
    private final ByteBuf[] headers;
    private final PeerViews[] views;
    private final PeerViews messageViews;
    private final ChannelFuture[] writes;

    /**
     * @param peers the connections, indexed by rank (filled in as peers connect)
     */
    DataFrames(Channel[] peers) {
        int n = peers.length;
        this.peers = peers;
        this.headers = new ByteBuf[n];
        for (int p = 0; p < n; p++) {
            headers[p] = Unpooled.directBuffer(FrameHeader.BYTES);
        }
        this.views = new PeerViews[ExchangePhase.values().length];
        for (int i = 0; i < views.length; i++) {
            views[i] = new PeerViews(n);
        }
        this.messageViews = new PeerViews(n);
        this.writes = new ChannelFuture[n];
    }

    /**
     * Writes bytes {@code [offset, offset + length)} of {@code send} to {@code peer} as the DATA
     * frame {@code seq} of a collective.
     */
    void send(
            int peer,
            ExchangePhase phase,
            long step,
            long seq,
            ByteBuffer send,
            long offset,
            long length) {
        write(
                peer,
                FrameHeader.DATA,
                phase,
                step,
                seq,
                views[phase.ordinal()],
                send,
                offset,
                length);
    }

    /**
     * Writes bytes {@code [offset, offset + length)} of {@code send} to {@code peer} as the SEND
     * frame {@code seq}, a point-to-point message.
     */
    void sendMessage(int peer, long seq, ByteBuffer send, int offset, int length) {
        write(
                peer,
                FrameHeader.SEND,
                ExchangePhase.COLLECTIVE,
                -1,
                seq,
                messageViews,
                send,
                offset,
                length);
    }

    private void write(
            int peer,
            byte kind,
            ExchangePhase phase,
            long step,
            long seq,
            PeerViews source,
            ByteBuffer send,
            long offset,
            long length) {
        ByteBuf header = headers[peer].clear();
        FrameHeader.write(header, kind, phase.ordinal(), step, seq, length);
        peers[peer].write(header.retain(), peers[peer].voidPromise());
        writes[peer] = peers[peer].writeAndFlush(source.rows(send, peer, offset, length).retain());
    }

    /** The write to {@code peer} of the call in progress; forgotten once returned. */
    ChannelFuture takeWrite(int peer) {
        ChannelFuture write = writes[peer];
        writes[peer] = null;
        return write;
    }

    void release() {
        for (ByteBuf header : headers) {
            header.release();
        }
        for (PeerViews v : views) {
            v.release();
        }
        messageViews.release();
    }
}
