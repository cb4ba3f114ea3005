package moe.a2a.comm.tcp;

import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import moe.a2a.comm.A2aException;

/**
 * Frames received from one peer, in arrival order, until the rank thread takes them. A peer is at
 * most one collective ahead (each collective needs this rank's frames), so the queue stays short.
 * Written by the peer's event loop, read by the rank thread.
 */
final class PeerInbox {
    /** Result of {@link #poll} when the deadline passed first. */
    static final Frame TIMED_OUT =
            new Frame((byte) 0, 0, -1, -1, io.netty.buffer.Unpooled.EMPTY_BUFFER);

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition arrived = lock.newCondition();
    private final ArrayDeque<Frame> frames = new ArrayDeque<>();
    private A2aException failure;

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
