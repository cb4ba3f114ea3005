package moe.a2a.comm;

import java.nio.ByteBuffer;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;
import org.jspecify.annotations.Nullable;

/**
 * One rank's end of an all-to-all group. Every collective call must be made by every rank of the
 * group in the same order; a peer that does not arrive within the group's timeout, or that fails,
 * surfaces as an {@link A2aException} on every rank rather than a hang.
 *
 * <p>Buffers are laid out per peer: the segment for peer {@code p} starts at the sum of the counts
 * of peers {@code 0..p-1} (an exclusive prefix sum) and holds {@code counts[p]} bytes. Counts are
 * in bytes.
 *
 * <p>Beyond all-to-all, the collectives of the field (all-reduce, all-gather, reduce-scatter,
 * broadcast, equal-split all-to-all) and point-to-point messages: the CPU transports run them over
 * {@link #sendRecv} as ring or tree algorithms ({@link CollectiveAlgo}, {@link P2pCollectives});
 * NCCL runs its own. Their buffers are used from index 0, positions and limits ignored, and must be
 * little-endian for the reducing ones. {@link AsyncCollectives} runs any of them without blocking
 * the caller.
 *
 * <p>Owned by the rank's data-plane thread: implementations are not thread-safe per instance.
 */
public interface Communicator extends AutoCloseable {
    /** The peer of {@link #sendRecv} that stands for none: nothing sent, or nothing received. */
    int NONE = -1;

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
     * The time this rank has waited for each peer's frames in {@code phase} since it formed (by
     * this communicator's ranks; a copy), where the transport measures it; null where it does not.
     */
    default long @Nullable [] waitedNanos(ExchangePhase phase) {
        return null;
    }

    /**
     * Whether this transport can leave received segments where they landed, in memory the caller
     * may read ({@link #allToAllVInPlace}): a caller then needs no receive buffer of its own.
     */
    default boolean receivesInPlace() {
        return false;
    }

    /**
     * All-to-all-v as {@link #allToAllV(long, ExchangePhase, SegmentWriter, long[], ByteBuffer,
     * long[])}, but the received segments stay in the transport's own receive memory: the returned
     * buffer (little-endian) holds every source's segment at the offsets a receive buffer would,
     * {@code recvCounts}' running sums, this rank's own included. It stays valid until the next
     * call on this communicator; the caller must not write into it. Only when {@link
     * #receivesInPlace()}.
     *
     * @throws UnsupportedOperationException when this transport does not receive in place
     */
    default ByteBuffer allToAllVInPlace(
            long step,
            ExchangePhase phase,
            SegmentWriter writer,
            long[] sendCounts,
            long[] recvCounts) {
        throw new UnsupportedOperationException(
                transport() + " does not receive in place (receivesInPlace() is false)");
    }

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

    /**
     * Point to point: sends bytes {@code [sendOffset, sendOffset + sendBytes)} of {@code send} to
     * rank {@code to} and receives {@code recvBytes} bytes from rank {@code from}, handing them to
     * {@code sink} where they lie, both at once. Only the ranks named take part. Either side may be
     * {@link #NONE} (its buffer and sink then ignored). Each ordered pair's messages match in the
     * order they were sent; a message of another length than its receiver expects is an error
     * naming the peer, as a missing peer is after the group's timeout. {@code send}'s range must
     * stay untouched until this returns.
     */
    void sendRecv(
            int to,
            ByteBuffer send,
            int sendOffset,
            int sendBytes,
            int from,
            int recvBytes,
            InboundSink sink);

    /** Sends bytes {@code [offset, offset + bytes)} of {@code buf} to rank {@code to}. */
    default void send(int to, ByteBuffer buf, int offset, int bytes) {
        sendRecv(to, buf, offset, bytes, NONE, 0, null);
    }

    /** Receives {@code bytes} bytes from rank {@code from} into {@code buf} at {@code offset}. */
    default void recv(int from, ByteBuffer buf, int offset, int bytes) {
        sendRecv(NONE, null, 0, 0, from, bytes, InboundSink.copyTo(buf, offset));
    }

    /**
     * All-reduce of {@code count} elements: afterwards every rank's {@code recv} holds {@code op}
     * over every rank's {@code send}, element by element, computed in fp32 and rounded to {@code
     * dtype}, the same bits on every rank. {@code send} may be {@code recv} (in place).
     */
    default void allReduce(
            ByteBuffer send,
            ByteBuffer recv,
            int count,
            DType dtype,
            ReduceOp op,
            CollectiveAlgo algo) {
        P2pCollectives.allReduce(this, send, recv, count, dtype, op, algo);
    }

    /**
     * All-gather: rank {@code r}'s {@code bytesPerRank} bytes of {@code send} land in every rank's
     * {@code recv} at {@code r * bytesPerRank}.
     */
    default void allGather(ByteBuffer send, ByteBuffer recv, int bytesPerRank) {
        P2pCollectives.allGather(this, send, recv, bytesPerRank);
    }

    /**
     * Reduce-scatter: {@code send} holds {@code size() * countPerRank} elements; afterwards rank
     * {@code r}'s {@code recv} holds {@code op} over every rank's block {@code r} of them, computed
     * as {@link #allReduce} does.
     */
    default void reduceScatter(
            ByteBuffer send, ByteBuffer recv, int countPerRank, DType dtype, ReduceOp op) {
        P2pCollectives.reduceScatter(this, send, recv, countPerRank, dtype, op);
    }

    /** Broadcast: {@code root}'s first {@code bytes} bytes of {@code buf} land in every rank's. */
    default void broadcast(ByteBuffer buf, int bytes, int root, CollectiveAlgo algo) {
        P2pCollectives.broadcast(this, buf, bytes, root, algo);
    }

    /**
     * Equal-split all-to-all: block {@code p} ({@code bytesPerPeer} bytes at {@code p *
     * bytesPerPeer}) of {@code send} lands in peer {@code p}'s {@code recv} at block {@code
     * rank()}.
     */
    default void allToAll(ByteBuffer send, ByteBuffer recv, int bytesPerPeer) {
        P2pCollectives.allToAll(this, send, recv, bytesPerPeer);
    }

    /** Breaks the group: every rank's current and later calls fail with {@code cause}. */
    void abort(Throwable cause);

    /** Releases this rank's resources; the group cannot be used afterwards. */
    @Override
    void close();
}
