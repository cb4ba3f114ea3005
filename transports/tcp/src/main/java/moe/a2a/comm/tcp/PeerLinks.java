package moe.a2a.comm.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.PeerFailedException;
import org.jspecify.annotations.Nullable;

/**
 * One rank's links to its peers (a connection and an inbox per peer) and the group's failure: the
 * first failure seen, by this rank or by a peer, aborts the group once, sending every connected
 * peer an ABORT frame and failing every inbox. A peer that connects after that is refused.
 *
 * <p>Filled in by the event loops as peers connect; read by the rank thread; {@link #abort} may
 * come from any thread.
 */
final class PeerLinks {
    private final int rank;
    private final Channel[] peers;
    private final PeerInbox[] inboxes;
    private final CountDownLatch connected;
    private volatile @Nullable A2aException failure;

    PeerLinks(int rank, int size) {
        this.rank = rank;
        this.peers = new Channel[size];
        this.inboxes = new PeerInbox[size];
        for (int p = 0; p < size; p++) {
            inboxes[p] = new PeerInbox(rank, p);
        }
        this.connected = new CountDownLatch(size - 1);
    }

    /** The connections, indexed by rank (null until the peer has connected). */
    Channel[] channels() {
        return peers;
    }

    /** The inboxes, indexed by rank. */
    PeerInbox[] inboxes() {
        return inboxes;
    }

    PeerInbox inbox(int peer) {
        return inboxes[peer];
    }

    /**
     * Takes {@code channel} as {@code peer}'s connection, unless it has one or the group failed.
     */
    synchronized boolean register(int peer, Channel channel) {
        if (peers[peer] != null || failure != null) {
            return false;
        }
        peers[peer] = channel;
        connected.countDown();
        return true;
    }

    /** Waits up to {@code waitNs} for every higher rank to connect; false when one is missing. */
    boolean awaitConnected(long waitNs) throws InterruptedException {
        return connected.await(waitNs, TimeUnit.NANOSECONDS);
    }

    /** The lowest peer not connected yet, or -1. */
    synchronized int firstMissing() {
        for (int p = 0; p < peers.length; p++) {
            if (p != rank && peers[p] == null) {
                return p;
            }
        }
        return -1;
    }

    /** Aborts the group with {@code cause}, unless it failed already. */
    void abort(Throwable cause) {
        A2aException reason =
                cause instanceof A2aException a ? a : new A2aException("aborted: " + cause, cause);
        synchronized (this) {
            if (failure != null) {
                return;
            }
            failure = reason;
        }
        byte[] text = String.valueOf(cause.getMessage()).getBytes(StandardCharsets.UTF_8);
        int len = Math.min(text.length, FrameHeader.MAX_ABORT_BYTES);
        for (Channel ch : peers) {
            if (ch != null && ch.isActive()) {
                ByteBuf frame = ch.alloc().buffer(FrameHeader.BYTES + len);
                FrameHeader.write(frame, FrameHeader.ABORT, 0, -1, 0, len);
                ch.writeAndFlush(frame.writeBytes(text, 0, len))
                        .addListener(ChannelFutureListener.CLOSE);
            }
        }
        for (int p = 0; p < inboxes.length; p++) {
            inboxes[p].fail(new PeerFailedException(rank, reason));
        }
    }

    /** Aborts the group with {@code e}, then throws it. */
    void fail(A2aException e) {
        abort(e);
        throw e;
    }

    /** Throws, as a {@link PeerFailedException}, when the group has failed. */
    void throwIfFailed() {
        A2aException f = failure;
        if (f != null) {
            throw f instanceof PeerFailedException ? f : new PeerFailedException(rank, f);
        }
    }

    /** Closes every connection and inbox, after the group was aborted with {@code closed}. */
    void close(A2aException closed) {
        for (Channel ch : peers) {
            if (ch != null) {
                ch.close().syncUninterruptibly();
            }
        }
        for (PeerInbox inbox : inboxes) {
            inbox.close(closed);
        }
    }
}
