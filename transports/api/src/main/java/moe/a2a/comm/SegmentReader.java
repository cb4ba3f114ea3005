package moe.a2a.comm;

import java.nio.ByteBuffer;

/**
 * Consumes every source's segment where it lies, all sources at once: in-process straight from each
 * source's send buffer (nothing is copied), otherwise from where the transport received them. The
 * buffers may be read only during the call. Called on the rank's thread, once per exchange.
 */
@FunctionalInterface
public interface SegmentReader {
    /**
     * Source {@code s}'s segment for this rank starts at byte {@code offsets[s]} of {@code
     * segments[s]} and has the length this rank passed as {@code recvCounts[s]}.
     */
    void read(ByteBuffer[] segments, long[] offsets);
}
