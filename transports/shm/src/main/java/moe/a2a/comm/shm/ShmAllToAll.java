package moe.a2a.comm.shm;

import static moe.a2a.comm.shm.ShmLayout.A2A_DONE;
import static moe.a2a.comm.shm.ShmLayout.A2A_EXPECT;
import static moe.a2a.comm.shm.ShmLayout.A2A_GEN;
import static moe.a2a.comm.shm.ShmLayout.A2A_OFFSET;
import static moe.a2a.comm.shm.ShmLayout.A2A_READY;
import static moe.a2a.comm.shm.ShmLayout.A2A_SENT;
import static moe.a2a.comm.shm.ShmLayout.DATA_AT;
import static moe.a2a.comm.shm.ShmLayout.slot;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Objects;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.ExchangeErrors;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.SegmentReader;
import moe.a2a.comm.SegmentWriter;
import moe.a2a.comm.Segments;
import org.jspecify.annotations.Nullable;

/**
 * The all-to-all-v of one rank, in its three phases: the receiver lays out its region (one segment
 * per source, or in place: at a receive buffer's running sums) and announces each source's offset,
 * count and region generation; each source, once its receiver is ready and the counts agree, writes
 * its segment there and releases {@code A2A_DONE}; the receiver waits for every source and copies
 * each segment out (into a plain receive buffer) or hands them to a reader where they lie. The
 * scratch arrays are reused so that an exchange allocates nothing.
 *
 * <p>Owned by the rank's thread.
 */
final class ShmAllToAll {
    private static final VarHandle LONG = ShmControl.LONG;
    private static final ValueLayout.OfLong WORD = ShmControl.WORD;

    private final int rank;
    private final int size;
    private final ShmRegions regions;
    private final ShmControl control;
    private final MemorySegment own;
    private final ShmWait wait;
    private final boolean[] pending;

    private final long[] sendAt;
    private final long[] recvAt;
    private final long[] regionAt;
    private final @Nullable ByteBuffer[] segments;
    private final long[] offsets;

    ShmAllToAll(int rank, int size, ShmRegions regions, ShmControl control, ShmWait wait) {
        this.rank = rank;
        this.size = size;
        this.regions = regions;
        this.control = control;
        this.own = control.own();
        this.wait = wait;
        this.pending = wait.pending;
        this.sendAt = new long[size];
        this.recvAt = new long[size];
        this.regionAt = new long[size];
        this.segments = new ByteBuffer[size];
        this.offsets = new long[size];
    }

    /**
     * Runs all-to-all-v {@code k}: from {@code send} or {@code writer}, into {@code recv}, {@code
     * reader} or (with {@code inPlace}) this rank's region laid out as a receive buffer.
     */
    void exchange(
            long step,
            ExchangePhase phase,
            long k,
            @Nullable ByteBuffer send,
            @Nullable SegmentWriter writer,
            long[] sendCounts,
            @Nullable ByteBuffer recv,
            @Nullable SegmentReader reader,
            long[] recvCounts,
            boolean inPlace) {
        final long recvTotal = Segments.offsets(recvCounts, recvAt);
        if (recv != null && recvTotal > recv.capacity()) {
            throw new A2aException(
                    "receive buffer too small: rank="
                            + rank
                            + ", needBytes="
                            + recvTotal
                            + ", capacityBytes="
                            + recv.capacity());
        }
        Segments.offsets(sendCounts, sendAt);
        long region = 0;
        if (inPlace) {
            // laid out as a receive buffer: every source (this rank too) at its running sum
            System.arraycopy(recvAt, 0, regionAt, 0, size);
            region = recvTotal;
        } else {
            for (int src = 0; src < size; src++) {
                if (src != rank) {
                    regionAt[src] = region;
                    region += ShmLayout.align(recvCounts[src]);
                }
            }
        }
        regions.ensure(region);
        for (int src = 0; src < size; src++) {
            if (src != rank) {
                long at = slot(src);
                own.set(WORD, at + A2A_OFFSET, regionAt[src]);
                own.set(WORD, at + A2A_EXPECT, recvCounts[src]);
                own.set(WORD, at + A2A_GEN, regions.gen());
                LONG.setRelease(own, at + A2A_READY, k);
            }
        }
        if (sendCounts[rank] != recvCounts[rank]) {
            throw ExchangeErrors.countMismatch(rank, rank, sendCounts[rank], recvCounts[rank]);
        }
        if (writer != null) {
            ByteBuffer self = inPlace ? regions.view() : recv;
            long selfAt = inPlace ? DATA_AT + regionAt[rank] : recvAt[rank];
            writeAll(step, phase, k, writer, sendCounts, self, selfAt);
        } else {
            Objects.requireNonNull(send, "send");
            sendEach(step, phase, k, send, sendCounts);
            if (recv != null && sendCounts[rank] > 0) {
                recv.put((int) recvAt[rank], send, (int) sendAt[rank], (int) sendCounts[rank]);
            }
        }
        receive(step, phase, k, recv, recvCounts);
        if (reader != null) {
            for (int src = 0; src < size; src++) {
                segments[src] = regions.view();
                offsets[src] = DATA_AT + regionAt[src];
            }
            segments[rank] = send;
            offsets[rank] = sendAt[rank];
            reader.read(segments, offsets);
            Arrays.fill(segments, null);
        }
    }

    /** Copies each peer's segment out of {@code send} into its region as soon as it is ready. */
    private void sendEach(
            long step, ExchangePhase phase, long k, ByteBuffer send, long[] sendCounts) {
        int remaining = wait.all(step, phase);
        while (remaining > 0) {
            boolean progressed = false;
            for (int i = 1; i < size; i++) {
                int dst = (rank + i) % size;
                if (pending[dst] && readyForExchange(dst, k, sendCounts[dst])) {
                    long bytes = sendCounts[dst];
                    if (bytes > 0) {
                        MemorySegment peer = control.peer(dst);
                        long at = slot(rank);
                        regions.peer(dst, peer.get(WORD, at + A2A_GEN))
                                .put(
                                        (int) (DATA_AT + peer.get(WORD, at + A2A_OFFSET)),
                                        send,
                                        (int) sendAt[dst],
                                        (int) bytes);
                    }
                    exchangeDone(dst, k, bytes);
                    pending[dst] = false;
                    remaining--;
                    progressed = true;
                }
            }
            wait.pass(progressed);
        }
    }

    /**
     * Waits until every peer is ready, then has the writer write every segment where it goes (this
     * rank's own into {@code self} at {@code selfAt}).
     */
    private void writeAll(
            long step,
            ExchangePhase phase,
            long k,
            SegmentWriter writer,
            long[] sendCounts,
            @Nullable ByteBuffer self,
            long selfAt) {
        int remaining = wait.all(step, phase);
        while (remaining > 0) {
            boolean progressed = false;
            for (int i = 1; i < size; i++) {
                int dst = (rank + i) % size;
                if (pending[dst] && readyForExchange(dst, k, sendCounts[dst])) {
                    MemorySegment peer = control.peer(dst);
                    long at = slot(rank);
                    segments[dst] = regions.peer(dst, peer.get(WORD, at + A2A_GEN));
                    offsets[dst] = DATA_AT + peer.get(WORD, at + A2A_OFFSET);
                    pending[dst] = false;
                    remaining--;
                    progressed = true;
                }
            }
            wait.pass(progressed);
        }
        segments[rank] = self;
        offsets[rank] = selfAt;
        writer.writeAll(segments, offsets, sendCounts);
        Arrays.fill(segments, null);
        for (int dst = 0; dst < size; dst++) {
            if (dst != rank) {
                exchangeDone(dst, k, sendCounts[dst]);
            }
        }
    }

    /**
     * Whether {@code dst} is ready for exchange {@code k}; throws, after telling {@code dst}, when
     * it expects another count than {@code bytes}.
     */
    private boolean readyForExchange(int dst, long k, long bytes) {
        MemorySegment peer = control.peer(dst);
        long at = slot(rank);
        if ((long) LONG.getAcquire(peer, at + A2A_READY) != k) {
            return false;
        }
        long expected = peer.get(WORD, at + A2A_EXPECT);
        if (expected != bytes) {
            exchangeDone(dst, k, bytes);
            throw ExchangeErrors.countMismatch(rank, dst, bytes, expected);
        }
        return true;
    }

    private void exchangeDone(int dst, long k, long bytes) {
        MemorySegment peer = control.peer(dst);
        long at = slot(rank);
        peer.set(WORD, at + A2A_SENT, bytes);
        LONG.setRelease(peer, at + A2A_DONE, k);
    }

    /** Waits for every source's segment; copies each into {@code recv} (if any) as it arrives. */
    private void receive(
            long step, ExchangePhase phase, long k, @Nullable ByteBuffer recv, long[] recvCounts) {
        int remaining = wait.all(step, phase);
        while (remaining > 0) {
            boolean progressed = false;
            for (int src = 0; src < size; src++) {
                long at = slot(src);
                if (pending[src] && (long) LONG.getAcquire(own, at + A2A_DONE) == k) {
                    long sent = own.get(WORD, at + A2A_SENT);
                    if (sent != recvCounts[src]) {
                        throw ExchangeErrors.countMismatch(src, rank, sent, recvCounts[src]);
                    }
                    if (recv != null && sent > 0) {
                        recv.put(
                                (int) recvAt[src],
                                regions.view(),
                                (int) (DATA_AT + regionAt[src]),
                                (int) sent);
                    }
                    pending[src] = false;
                    remaining--;
                    progressed = true;
                }
            }
            wait.pass(progressed);
        }
    }
}
