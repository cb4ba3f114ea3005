package moe.a2a.comm.tcp;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.Objects;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.CollectiveArgs;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangeErrors;
import moe.a2a.comm.InboundSink;

/**
 * The point-to-point messages of a rank, off the wire: their arguments checked, where one lands
 * when its sink does not say (a direct buffer of this rank's, reused), and the messages the rank
 * sends itself, handed over at once when the same call receives them, else kept (copied) until a
 * later call does. Owned by the rank thread.
 */
final class Messages {
    private final int rank;
    private final int size;
    private final ArrayDeque<ByteBuffer> toSelf = new ArrayDeque<>();
    private ByteBuffer inbound = ByteBuffer.allocateDirect(0);

    Messages(int rank, int size) {
        this.rank = rank;
        this.size = size;
    }

    /** Throws {@link IllegalArgumentException} naming the first bad argument of a sendRecv. */
    void check(
            int to,
            ByteBuffer send,
            int sendOffset,
            int sendBytes,
            int from,
            int recvBytes,
            InboundSink sink) {
        CollectiveArgs.checkPeer("to", to, size);
        CollectiveArgs.checkPeer("from", from, size);
        if (to != Communicator.NONE) {
            Objects.requireNonNull(send, "send");
            if (sendOffset < 0 || sendBytes < 0 || sendOffset > send.capacity() - sendBytes) {
                throw new IllegalArgumentException(
                        "send range: ["
                                + sendOffset
                                + ", "
                                + ((long) sendOffset + sendBytes)
                                + ") (expected: within [0, "
                                + send.capacity()
                                + "))");
            }
        }
        if (from != Communicator.NONE) {
            Objects.requireNonNull(sink, "sink");
            if (recvBytes < 0) {
                throw new IllegalArgumentException("recvBytes: " + recvBytes + " (expected: >= 0)");
            }
        }
    }

    /**
     * Where a message of {@code bytes} for {@code sink} lands: where an {@link InboundSink#copyTo}
     * sink wants it (then nothing is left for the sink to do), else in this rank's buffer.
     */
    ByteBuffer landing(InboundSink sink, int bytes) {
        if (sink instanceof InboundSink.CopyTo copy
                && copy.offset() >= 0
                && copy.offset() <= copy.dst().capacity() - bytes) {
            return copy.dst();
        }
        if (inbound.capacity() < bytes) {
            inbound = ByteBuffer.allocateDirect(bytes).order(ByteOrder.LITTLE_ENDIAN);
        }
        return inbound;
    }

    /** Where in {@code landing} (from {@link #landing}) the message for {@code sink} starts. */
    static int landingOffset(InboundSink sink, ByteBuffer landing) {
        return sink instanceof InboundSink.CopyTo copy && copy.dst() == landing ? copy.offset() : 0;
    }

    /** Whether a message that landed in {@code landing} is still to be handed to its sink. */
    boolean forSink(ByteBuffer landing) {
        return landing == inbound;
    }

    /**
     * The part of a sendRecv with this rank itself: a message sent ({@code sends}), received
     * ({@code receives}), or both.
     *
     * @throws A2aException when the message received is not {@code recvBytes} long, or there is
     *     none
     */
    void self(
            boolean sends,
            ByteBuffer send,
            int sendOffset,
            int sendBytes,
            boolean receives,
            int recvBytes,
            InboundSink sink) {
        if (sends && receives && toSelf.isEmpty()) {
            deliver(send, sendOffset, sendBytes, recvBytes, sink);
            return;
        }
        if (sends) {
            ByteBuffer copy = ByteBuffer.allocateDirect(sendBytes).order(ByteOrder.LITTLE_ENDIAN);
            toSelf.add(copy.put(0, send, sendOffset, sendBytes));
        }
        if (receives) {
            ByteBuffer message = toSelf.poll();
            if (message == null) {
                throw new A2aException(
                        "point-to-point receive from this rank, which sent itself nothing: rank="
                                + rank);
            }
            deliver(message, 0, message.capacity(), recvBytes, sink);
        }
    }

    private void deliver(
            ByteBuffer buf, int offset, int sentBytes, int expectedBytes, InboundSink sink) {
        if (sentBytes != expectedBytes) {
            throw ExchangeErrors.lengthMismatch(rank, rank, sentBytes, expectedBytes);
        }
        sink.accept(buf, offset, expectedBytes);
    }
}
