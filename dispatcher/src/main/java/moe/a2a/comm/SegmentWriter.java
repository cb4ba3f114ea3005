package moe.a2a.comm;

import java.nio.ByteBuffer;

/**
 * Writes this rank's segment for one peer, so that a transport can have the rows written where they
 * go (in-process: straight into the peer's receive buffer) instead of copying a packed send buffer.
 * Called on the rank's thread, once per peer per exchange.
 */
@FunctionalInterface
public interface SegmentWriter {
    /**
     * Writes exactly the segment's bytes for {@code peer} into {@code dst} from byte {@code
     * dstOffset}.
     */
    void write(int peer, ByteBuffer dst, int dstOffset);
}
