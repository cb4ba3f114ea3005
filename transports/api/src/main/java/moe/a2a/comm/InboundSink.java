package moe.a2a.comm;

import java.nio.ByteBuffer;

/**
 * Consumes a point-to-point message where it lies: in-process straight from the sender's buffer
 * (nothing is copied), otherwise from where the transport received it. The buffer may be read only
 * during the call. Called on the rank's thread, once per message, also for an empty one.
 */
@FunctionalInterface
public interface InboundSink {
    /** The message is bytes {@code [offset, offset + bytes)} of {@code src}. */
    void accept(ByteBuffer src, int offset, int bytes);

    /**
     * A sink that copies the message into {@code dst} at {@code offset}. A transport that can
     * recognises it and receives the message straight there instead, sparing the copy.
     */
    static InboundSink copyTo(ByteBuffer dst, int offset) {
        return new CopyTo(dst, offset);
    }

    /** The sink of {@link #copyTo}: the message belongs at {@code offset} of {@code dst}. */
    record CopyTo(ByteBuffer dst, int offset) implements InboundSink {
        @Override
        public void accept(ByteBuffer src, int from, int bytes) {
            dst.put(offset, src, from, bytes);
        }
    }
}
