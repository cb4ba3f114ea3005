package moe.a2a.comm.shm;

import static moe.a2a.comm.Communicator.NONE;
import static moe.a2a.comm.shm.ShmLayout.DATA_AT;
import static moe.a2a.comm.shm.ShmLayout.P2P_DONE;
import static moe.a2a.comm.shm.ShmLayout.P2P_EXPECT;
import static moe.a2a.comm.shm.ShmLayout.P2P_GEN;
import static moe.a2a.comm.shm.ShmLayout.P2P_READY;
import static moe.a2a.comm.shm.ShmLayout.P2P_SENT;
import static moe.a2a.comm.shm.ShmLayout.slot;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import moe.a2a.comm.ExchangeErrors;
import moe.a2a.comm.InboundSink;

/**
 * Point-to-point messages of one rank: per ordered pair the receiver publishes the message number
 * it is ready for and how long it expects it, the source writes into the receiver's region and
 * releases {@code P2P_DONE}; a length mismatch is reported by both sides, naming both lengths.
 *
 * <p>Owned by the rank's thread.
 */
final class ShmPointToPoint {
    private static final VarHandle LONG = ShmControl.LONG;
    private static final ValueLayout.OfLong WORD = ShmControl.WORD;

    private final int rank;
    private final ShmRegions regions;
    private final ShmControl control;
    private final MemorySegment own;
    private final ShmWait wait;

    /** Point-to-point messages sent to, and received from, each peer. */
    private final long[] sentTo;

    private final long[] receivedFrom;

    ShmPointToPoint(int rank, int size, ShmRegions regions, ShmControl control, ShmWait wait) {
        this.rank = rank;
        this.regions = regions;
        this.control = control;
        this.own = control.own();
        this.wait = wait;
        this.sentTo = new long[size];
        this.receivedFrom = new long[size];
    }

    /**
     * Announces to {@code from} that this rank is ready for its next message, writes the outgoing
     * one into {@code to}'s region once {@code to} is ready for it, then hands the incoming one to
     * {@code sink} where it landed, in this rank's region. The arguments are checked already.
     */
    void sendRecv(
            int to,
            ByteBuffer send,
            int sendOffset,
            int sendBytes,
            int from,
            int recvBytes,
            InboundSink sink) {
        if (to == rank) {
            if (sendBytes != recvBytes) {
                throw ExchangeErrors.lengthMismatch(rank, rank, sendBytes, recvBytes);
            }
            sink.accept(send, sendOffset, sendBytes);
            return;
        }
        long incoming = 0;
        if (from != NONE) {
            incoming = ++receivedFrom[from];
            regions.ensure(recvBytes);
            long at = slot(from);
            own.set(WORD, at + P2P_EXPECT, recvBytes);
            own.set(WORD, at + P2P_GEN, regions.gen());
            LONG.setRelease(own, at + P2P_READY, incoming);
        }
        if (to != NONE) {
            long outgoing = ++sentTo[to];
            MemorySegment peer = control.peer(to);
            long at = slot(rank);
            wait.one(to);
            while ((long) LONG.getAcquire(peer, at + P2P_READY) != outgoing) {
                wait.idle();
            }
            long expected = peer.get(WORD, at + P2P_EXPECT);
            if (expected == sendBytes && sendBytes > 0) {
                regions.peer(to, peer.get(WORD, at + P2P_GEN))
                        .put((int) DATA_AT, send, sendOffset, sendBytes);
            }
            peer.set(WORD, at + P2P_SENT, sendBytes);
            LONG.setRelease(peer, at + P2P_DONE, outgoing);
            if (expected != sendBytes) {
                throw ExchangeErrors.lengthMismatch(rank, to, sendBytes, expected);
            }
        }
        if (from != NONE) {
            long at = slot(from);
            wait.one(from);
            while ((long) LONG.getAcquire(own, at + P2P_DONE) != incoming) {
                wait.idle();
            }
            long sent = own.get(WORD, at + P2P_SENT);
            if (sent != recvBytes) {
                throw ExchangeErrors.lengthMismatch(from, rank, sent, recvBytes);
            }
            sink.accept(regions.view(), (int) DATA_AT, recvBytes);
        }
    }
}
