package moe.a2a.comm.tcp;

import io.netty.buffer.ByteBuf;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import moe.a2a.comm.A2aException;

/**
 * Frames received from one peer, in arrival order, until the rank thread takes them. A peer is at
 * most one collective ahead (each collective needs this rank's frames), so the queue stays short.
 * Written by the peer's event loop, read by the rank thread.
 *
 * <p>The rank thread also posts here where the rows of its current collective's DATA frame go; the
 * event loop claims that place when the frame starts and reads the rows straight into it. A frame
 * that starts before its place is posted (the peer ran ahead) arrives in Netty's buffers instead.
 */
final class PeerInbox {
    /** Result of {@link #poll} when the deadline passed first. */
    static final Frame TIMED_OUT =
            new Frame((byte) 0, 0, -1, -1, io.netty.buffer.Unpooled.EMPTY_BUFFER);

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition arrived = lock.newCondition();
    private final ArrayDeque<Frame> frames = new ArrayDeque<>();
    private A2aException failure;
    private long postedOp = -1;
    private ByteBuf posted;

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

    /** Posts {@code region} for the rows of the DATA frame of collective {@code op}. */
    void post(long op, ByteBuf region) {
        lock.lock();
        try {
            postedOp = op;
            posted = region;
        } finally {
            lock.unlock();
        }
    }

    /**
     * The posted region for a DATA frame of collective {@code op} with {@code length} bytes, taken
     * (a region is claimed once) and retained for the caller, or null when none fits: the frame
     * then travels in Netty's buffers, and the rank checks it as usual.
     */
    ByteBuf claim(long op, long length) {
        lock.lock();
        try {
            if (posted == null || postedOp != op || posted.capacity() != length) {
                return null;
            }
            ByteBuf region = posted;
            posted = null;
            return region.retain();
        } finally {
            lock.unlock();
        }
    }

    /** Withdraws the posted region, if the event loop has not claimed it. */
    void unpost() {
        lock.lock();
        try {
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
}
