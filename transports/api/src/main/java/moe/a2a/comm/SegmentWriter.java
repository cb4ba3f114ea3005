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

    /**
     * Writes every peer's segment, with every destination known at once: peer {@code p}'s into
     * {@code dsts[p]} from byte {@code dstOffsets[p]}, for each peer whose {@code lengths[p]} is
     * not zero. A transport that holds all destinations together (in-process) calls this instead of
     * {@link #write}, so that a writer can walk its own rows once rather than once per peer. The
     * default writes peer by peer.
     */
    default void writeAll(ByteBuffer[] dsts, long[] dstOffsets, long[] lengths) {
        for (int p = 0; p < dsts.length; p++) {
            if (lengths[p] > 0) {
                write(p, dsts[p], (int) dstOffsets[p]);
            }
        }
    }
}
