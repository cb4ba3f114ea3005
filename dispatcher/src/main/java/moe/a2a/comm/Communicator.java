package moe.a2a.comm;

import java.nio.ByteBuffer;

/**
 * One rank's end of an all-to-all group. Every collective call must be made by every rank of the
 * group in the same order; a peer that does not arrive within the group's timeout, or that fails,
 * surfaces as an {@link A2aException} on every rank rather than a hang.
 *
 * <p>Buffers are laid out per peer: the segment for peer {@code p} starts at the sum of the counts
 * of peers {@code 0..p-1} (an exclusive prefix sum) and holds {@code counts[p]} bytes. Counts are
 * in bytes.
 *
 * <p>Owned by the rank's data-plane thread: implementations are not thread-safe per instance.
 */
public interface Communicator extends AutoCloseable {

    /** This rank, in {@code [0, size())}. */
    int rank();

    /** The world size {@code N}. */
    int size();

    /** The transport this group's rows travel over. */
    Transport transport();

    /**
     * Exchanges one count per peer: afterwards {@code recvCounts[p]} holds what peer {@code p}
     * passed as its {@code sendCounts[rank()]}. Every rank passes the same {@code step} and {@code
     * phase}; transports that can check it do.
     */
    void allToAllCounts(long step, ExchangePhase phase, long[] sendCounts, long[] recvCounts);

    /**
     * All-to-all-v of bytes: the segment of {@code send} for peer {@code p} lands in peer {@code
     * p}'s {@code recv} at the segment for this rank. Both sides must agree on every count (as
     * obtained from {@link #allToAllCounts}); a mismatch is an error, not a truncation. Buffer
     * positions and limits are ignored: segments start at index 0. {@code step} and {@code phase}
     * as for {@link #allToAllCounts}.
     */
    void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts);

    /**
     * All-to-all-v whose outgoing segments {@code writer} writes on demand, each exactly {@code
     * sendCounts[peer]} bytes; otherwise as {@link #allToAllV(long, ExchangePhase, ByteBuffer,
     * long[], ByteBuffer, long[])}. Transports that can write into the destination do; others stage
     * the segments and send them.
     */
    void allToAllV(
            long step,
            ExchangePhase phase,
            SegmentWriter writer,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts);

    /**
     * All-to-all-v whose incoming segments {@code reader} consumes where they lie, instead of in a
     * receive buffer; otherwise as {@link #allToAllV(long, ExchangePhase, ByteBuffer, long[],
     * ByteBuffer, long[])}. {@code send} must stay untouched until this returns.
     */
    void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            SegmentReader reader,
            long[] recvCounts);

    /** Returns once every rank has called it. */
    void barrier();

    /** Breaks the group: every rank's current and later calls fail with {@code cause}. */
    void abort(Throwable cause);

    /** Releases this rank's resources; the group cannot be used afterwards. */
    @Override
    void close();
}
