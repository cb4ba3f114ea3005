package moe.a2a.comm.local;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.ExchangeErrors;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ExchangeTimeoutException;
import moe.a2a.comm.InboundSink;
import moe.a2a.comm.PeerFailedException;

/**
 * The point-to-point messages from one rank to another of a {@link LocalGroup}, one at a time: the
 * sender posts where its bytes lie and waits until the receiver has consumed them there (nothing is
 * copied on the way), so messages match in the order sent. A broken group wakes both sides.
 */
final class LocalMailbox {
    private final int src;
    private final int dst;
    private final LocalBarrier group;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private ByteBuffer buf;
    private int offset;
    private int bytes;
    private boolean posted;

    LocalMailbox(int src, int dst, LocalBarrier group) {
        this.src = src;
        this.dst = dst;
        this.group = group;
    }

    /** Called by the sender; the previous message was consumed before its sender returned. */
    void post(ByteBuffer buf, int offset, int bytes) {
        lock.lock();
        try {
            this.buf = buf;
            this.offset = offset;
            this.bytes = bytes;
            posted = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Called by the sender: returns once the receiver has consumed the posted message. */
    void awaitTaken(long deadline, long timeoutNs) {
        lock.lock();
        try {
            while (posted) {
                waitLocked(src, dst, deadline, timeoutNs);
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Called by the receiver: waits for the next message, hands it to {@code sink} where the sender
     * left it, and releases the sender.
     *
     * @throws A2aException when the message is not {@code expected} bytes long
     */
    void take(int expected, InboundSink sink, long deadline, long timeoutNs) {
        ByteBuffer from;
        int at;
        lock.lock();
        try {
            while (!posted) {
                waitLocked(dst, src, deadline, timeoutNs);
            }
            if (bytes != expected) {
                throw ExchangeErrors.lengthMismatch(src, dst, bytes, expected);
            }
            from = buf;
            at = offset;
        } finally {
            lock.unlock();
        }
        // the sender waits in awaitTaken meanwhile, so its bytes stay put
        sink.accept(from, at, expected);
        lock.lock();
        try {
            posted = false;
            buf = null;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Wakes both sides, to see that the group broke. */
    void wake() {
        lock.lock();
        try {
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void waitLocked(int rank, int peer, long deadline, long timeoutNs) {
        Throwable failure = group.failure();
        if (failure != null) {
            throw new PeerFailedException(rank, failure);
        }
        long remaining = deadline - System.nanoTime();
        if (remaining <= 0) {
            throw new ExchangeTimeoutException(-1, ExchangePhase.COLLECTIVE, rank, peer, timeoutNs);
        }
        try {
            changed.awaitNanos(Math.min(remaining, TimeUnit.SECONDS.toNanos(1)));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new A2aException("point-to-point interrupted: rank=" + rank, e);
        }
    }
}
