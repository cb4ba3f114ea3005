package moe.a2a.comm.local;

import java.nio.ByteBuffer;
import moe.a2a.comm.ExchangePhase;

/**
 * The shared state of one in-process group of {@code size} ranks: where each rank's receive buffer
 * is published for its peers to write into, the counts matrix, and the barrier. Create one per
 * group and hand {@link #communicator(int)} to each rank's thread.
 */
public final class LocalGroup {
    /** Default time a rank waits for its peers in one collective. */
    public static final long DEFAULT_TIMEOUT_NS = 10_000_000_000L;

    private final int size;
    private final long timeoutNs;
    private final LocalBarrier barrier;
    private final LocalCommunicator[] communicators;

    /** mailboxes[src][dst]: src's point-to-point messages to dst. */
    private final LocalMailbox[][] mailboxes;

    /** counts[src][dst]: published by src, read by dst between two barriers. */
    final long[][] counts;

    /** recvBuffers[dst]: published by dst, written by every src between two barriers. */
    final ByteBuffer[] recvBuffers;

    /** recvOffsets[dst][src]: where src's segment starts in dst's receive buffer. */
    final long[][] recvOffsets;

    /** recvLengths[dst][src]: how many bytes dst expects from src. */
    final long[][] recvLengths;

    /** sendBuffers[src]: published by src for its peers to read from, between two barriers. */
    final ByteBuffer[] sendBuffers;

    /**
     * sendOffsets[src][dst], sendLengths[src][dst]: where src's segment for dst lies in
     * sendBuffers[src].
     */
    final long[][] sendOffsets;

    final long[][] sendLengths;

    public LocalGroup(int size, long timeoutNs) {
        if (size <= 0) {
            throw new IllegalArgumentException("size: " + size + " (expected: > 0)");
        }
        if (timeoutNs <= 0) {
            throw new IllegalArgumentException("timeoutNs: " + timeoutNs + " (expected: > 0)");
        }
        this.size = size;
        this.timeoutNs = timeoutNs;
        this.barrier = new LocalBarrier(size);
        this.counts = new long[size][size];
        this.recvBuffers = new ByteBuffer[size];
        this.recvOffsets = new long[size][size];
        this.recvLengths = new long[size][size];
        this.sendBuffers = new ByteBuffer[size];
        this.sendOffsets = new long[size][size];
        this.sendLengths = new long[size][size];
        this.mailboxes = new LocalMailbox[size][size];
        for (int src = 0; src < size; src++) {
            for (int dst = 0; dst < size; dst++) {
                mailboxes[src][dst] = new LocalMailbox(src, dst, barrier);
            }
        }
        this.communicators = new LocalCommunicator[size];
        for (int r = 0; r < size; r++) {
            communicators[r] = new LocalCommunicator(this, r);
        }
    }

    public LocalGroup(int size) {
        this(size, DEFAULT_TIMEOUT_NS);
    }

    /** The communicator of {@code rank}; each is owned by that rank's thread. */
    public LocalCommunicator communicator(int rank) {
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException(
                    "rank: " + rank + " (expected: in [0, " + size + "))");
        }
        return communicators[rank];
    }

    public int size() {
        return size;
    }

    /** True once a rank timed out, aborted or closed: the group must be replaced. */
    public boolean isBroken() {
        return barrier.isBroken();
    }

    void await(int rank, long step, ExchangePhase phase) {
        barrier.await(rank, step, phase, timeoutNs);
    }

    void fail(Throwable cause) {
        barrier.fail(cause);
        for (LocalMailbox[] row : mailboxes) {
            for (LocalMailbox m : row) {
                m.wake();
            }
        }
    }

    LocalMailbox mailbox(int src, int dst) {
        return mailboxes[src][dst];
    }

    long timeoutNs() {
        return timeoutNs;
    }
}
