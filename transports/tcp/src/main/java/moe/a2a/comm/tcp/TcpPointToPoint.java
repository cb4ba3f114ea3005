package moe.a2a.comm.tcp;

import static moe.a2a.comm.Communicator.NONE;

import java.nio.ByteBuffer;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.InboundSink;

/**
 * One rank's point-to-point messages: one SEND frame to its peer, one from its other, numbered in
 * the same per-pair sequences as the collectives' frames; messages of this rank to itself go
 * through {@link Messages}.
 *
 * <p>Owned by the rank thread.
 */
final class TcpPointToPoint {
    private final int rank;
    private final long timeoutNs;
    private final PeerLinks links;
    private final DataFrames frames;
    private final ReceiveRegions regions;
    private final FrameWaits waits;
    private final Messages messages;
    private final long[] sendSeq;
    private final long[] recvSeq;

    /**
     * @param sendSeq per peer, the sequence number of the next frame to it (shared with
     *     collectives)
     * @param recvSeq per peer, the sequence number of the next frame from it (shared likewise)
     */
    TcpPointToPoint(
            TcpConfig config,
            PeerLinks links,
            DataFrames frames,
            ReceiveRegions regions,
            FrameWaits waits,
            long[] sendSeq,
            long[] recvSeq) {
        this.rank = config.rank();
        this.timeoutNs = config.timeoutNs();
        this.links = links;
        this.frames = frames;
        this.regions = regions;
        this.waits = waits;
        this.messages = new Messages(config.rank(), config.size());
        this.sendSeq = sendSeq;
        this.recvSeq = recvSeq;
    }

    /**
     * Posts the receive from {@code from} (where an {@link InboundSink#copyTo} sink's bytes belong,
     * else in a buffer of this rank's), sends to {@code to} straight from {@code send}, waits for
     * the message and hands it to {@code sink}, then waits until the send is written. Messages of
     * this rank to itself go through {@link Messages}.
     */
    void sendRecv(
            int to,
            ByteBuffer send,
            int sendOffset,
            int sendBytes,
            int from,
            int recvBytes,
            InboundSink sink) {
        final int me = rank;
        messages.check(to, send, sendOffset, sendBytes, from, recvBytes, sink);
        links.throwIfFailed();
        final long deadline = System.nanoTime() + timeoutNs;
        final boolean remoteFrom = from != NONE && from != me;
        final boolean remoteTo = to != NONE && to != me;
        try {
            ByteBuffer landing = null;
            int landingOffset = 0;
            long recvOp = -1;
            if (remoteFrom) {
                recvOp = recvSeq[from]++;
                landing = messages.landing(sink, recvBytes);
                landingOffset = Messages.landingOffset(sink, landing);
                try {
                    regions.postMessage(from, recvOp, landing, landingOffset, recvBytes);
                } catch (A2aException e) {
                    links.inbox(from).unpost();
                    throw e;
                }
            }
            if (remoteTo) {
                frames.sendMessage(to, sendSeq[to]++, send, sendOffset, sendBytes);
            }
            if (to == me || from == me) {
                messages.self(to == me, send, sendOffset, sendBytes, from == me, recvBytes, sink);
            }
            if (remoteFrom) {
                Frame frame =
                        waits.await(
                                from,
                                -1,
                                ExchangePhase.COLLECTIVE,
                                recvOp,
                                FrameHeader.SEND,
                                deadline);
                try {
                    regions.takeMessage(frame, from, me, landing, landingOffset, recvBytes);
                } finally {
                    frame.release();
                    links.inbox(from).unpost();
                }
                if (messages.forSink(landing)) {
                    sink.accept(landing, landingOffset, recvBytes);
                }
            }
            if (remoteTo) {
                waits.awaitWrite(to, -1, ExchangePhase.COLLECTIVE, deadline);
            }
        } catch (RuntimeException e) {
            // whatever failed (a sink that threw included), the peers must not wait for this rank,
            // nor may it reuse a header whose write may still be in flight
            links.abort(e);
            throw e;
        }
    }
}
