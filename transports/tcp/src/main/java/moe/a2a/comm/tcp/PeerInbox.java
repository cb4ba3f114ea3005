package moe.a2a.comm.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.PeerFailedException;

/**
 * Frames received from one peer, in arrival order, until the rank thread takes them. Frames are
 * numbered per ordered pair of ranks ({@link FrameHeader}); a collective waits for every peer's
 * frame, but a point-to-point send returns once written, so a peer may be several messages ahead
 * and the queue holds them all. Written by the peer's event loop, read by the rank thread.
 *
 * <p>The rank thread also posts here how many bytes the next frame of rows it takes from this peer
 * (a collective's DATA or a point-to-point SEND) must hold and where they go; the event loop claims
 * that place when the frame starts and reads the rows straight into it, or fails the peer at once
 * when the frame's kind or length is another. A frame that starts before its post (the peer ran
 * ahead) is announced here and arrives in Netty's buffers instead; once it is complete or {@link
 * FrameDecoder}'s bound is buffered, the connection is held (not read) until the post of the last
 * frame read, which checks the announced length before reading resumes. Frames read before that one
 * are complete and queued, their lengths checked when they are taken.
 */
final class PeerInbox {
    /** Result of {@link #poll} when the deadline passed first. */
    static final Frame TIMED_OUT = new Frame((byte) 0, 0, -1, -1, Unpooled.EMPTY_BUFFER);

    /**
     * What {@link #claim} returns for a posted frame that has no place to land (zero bytes, or a
     * heap receive buffer): the frame is buffered, its length being the posted one.
     */
    static final ByteBuf NO_PLACE = Unpooled.EMPTY_BUFFER;

    private final int rank;
    private final int peer;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition arrived = lock.newCondition();
    private final ArrayDeque<Frame> frames = new ArrayDeque<>();
    private A2aException failure;
    private long postedOp = -1;
    private byte postedKind;
    private long postedBytes;
    private ByteBuf posted;

    /** The frame of rows being read that started before its post, or -1. */
    private long aheadOp = -1;

    private byte aheadKind;
    private long aheadBytes;

    /** The connection not read until the post of {@link #heldOp}, or null. */
    private Channel held;

    private long heldOp = -1;

    /**
     * @param rank this rank
     * @param peer the rank whose frames arrive here
     */
    PeerInbox(int rank, int peer) {
        this.rank = rank;
        this.peer = peer;
    }

    void offer(Frame frame) {
        lock.lock();
        try {
            if (failure != null) {
                frame.release();
                return;
            }
            frames.add(frame);
            arrived.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Posts that frame {@code op} from this peer is of {@code kind} and holds {@code bytes} bytes,
     * which land in {@code region} (or {@link #NO_PLACE}), and lets a connection held for it be
     * read again.
     *
     * @throws PeerFailedException when the frame that started before this post disagrees with it,
     *     or is an earlier one never posted; the connection stays held
     */
    void post(byte kind, long op, long bytes, ByteBuf region) {
        lock.lock();
        try {
            if (aheadOp >= 0 && aheadOp < op) {
                throw new PeerFailedException(
                        rank,
                        peer,
                        "unexpected "
                                + FrameHeader.kindName(aheadKind)
                                + " frame: op="
                                + aheadOp
                                + " (expected: op="
                                + op
                                + ")");
            }
            if (aheadOp == op) {
                check(op, aheadKind, aheadBytes, kind, bytes);
                aheadOp = -1;
            }
            postedOp = op;
            postedKind = kind;
            postedBytes = bytes;
            posted = region;
            if (held != null && op >= heldOp) {
                held.config().setAutoRead(true);
                held = null;
                heldOp = -1;
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Where frame {@code op} of {@code kind} with {@code length} bytes goes: the posted region,
     * taken (a region is claimed once) and retained for the caller; {@link #NO_PLACE}; or null when
     * nothing is posted for {@code op} yet, the frame being then announced for the post to check.
     *
     * @throws PeerFailedException when {@code kind} or {@code length} is not the posted one
     */
    ByteBuf claim(byte kind, long op, long length) {
        lock.lock();
        try {
            if (postedOp != op) {
                aheadOp = op;
                aheadKind = kind;
                aheadBytes = length;
                return null;
            }
            check(op, kind, length, postedKind, postedBytes);
            ByteBuf region = posted;
            postedOp = -1;
            posted = null;
            return region.retain();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Stops reading {@code channel} until the rank posts frame {@code op}, unless it already has: a
     * frame that ran ahead of its post is the last thing read from this peer. Frames before it are
     * complete, so the rank takes them without reading.
     */
    void hold(long op, Channel channel) {
        lock.lock();
        try {
            if (postedOp != op) {
                held = channel;
                heldOp = Math.max(heldOp, op);
                channel.config().setAutoRead(false);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Withdraws the posted region, if the event loop has not claimed it. */
    void unpost() {
        lock.lock();
        try {
            postedOp = -1;
            posted = null;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Marks the peer failed. Frames that arrived before still count (the peer sent them first);
     * once they are taken, every waiter gets {@code cause}.
     */
    void fail(A2aException cause) {
        lock.lock();
        try {
            if (failure == null) {
                failure = cause;
            }
            arrived.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Releases frames nobody will take; later frames are released on arrival. */
    void close(A2aException cause) {
        lock.lock();
        try {
            fail(cause);
            for (Frame f : frames) {
                f.release();
            }
            frames.clear();
        } finally {
            lock.unlock();
        }
    }

    /**
     * The next frame, or {@link #TIMED_OUT} once {@code deadlineNanos} (System.nanoTime) passes.
     */
    Frame poll(long deadlineNanos) {
        lock.lock();
        try {
            while (frames.isEmpty()) {
                if (failure != null) {
                    throw failure;
                }
                long waitNs = deadlineNanos - System.nanoTime();
                if (waitNs <= 0) {
                    return TIMED_OUT;
                }
                arrived.awaitNanos(Math.min(waitNs, TimeUnit.SECONDS.toNanos(1)));
            }
            return frames.poll();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new A2aException("interrupted while waiting for a peer", e);
        } finally {
            lock.unlock();
        }
    }

    private void check(long op, byte sentKind, long sentBytes, byte kind, long expectedBytes) {
        if (sentKind != kind) {
            throw new PeerFailedException(
                    rank,
                    peer,
                    "frame of another kind: op="
                            + op
                            + ", kind="
                            + FrameHeader.kindName(sentKind)
                            + " (expected: "
                            + FrameHeader.kindName(kind)
                            + ")");
        }
        if (sentBytes != expectedBytes) {
            throw new PeerFailedException(
                    rank,
                    peer,
                    FrameHeader.disagreement(kind)
                            + ": op="
                            + op
                            + ", sentBytes="
                            + sentBytes
                            + ", expectedBytes="
                            + expectedBytes);
        }
    }
}
