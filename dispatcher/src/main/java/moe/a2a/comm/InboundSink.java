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
}
