package moe.a2a.comm.shm;

import static moe.a2a.comm.shm.ShmLayout.A2A_DONE;
import static moe.a2a.comm.shm.ShmLayout.A2A_EXPECT;
import static moe.a2a.comm.shm.ShmLayout.A2A_GEN;
import static moe.a2a.comm.shm.ShmLayout.A2A_OFFSET;
import static moe.a2a.comm.shm.ShmLayout.A2A_READY;
import static moe.a2a.comm.shm.ShmLayout.A2A_SENT;
import static moe.a2a.comm.shm.ShmLayout.DATA_AT;
import static moe.a2a.comm.shm.ShmLayout.P2P_DONE;
import static moe.a2a.comm.shm.ShmLayout.P2P_EXPECT;
import static moe.a2a.comm.shm.ShmLayout.P2P_GEN;
import static moe.a2a.comm.shm.ShmLayout.P2P_READY;
import static moe.a2a.comm.shm.ShmLayout.P2P_SENT;
import static moe.a2a.comm.shm.ShmLayout.SIGNAL_PARITY_STRIDE;
import static moe.a2a.comm.shm.ShmLayout.SIGNAL_SEQ;
import static moe.a2a.comm.shm.ShmLayout.SIGNAL_VALUE;
import static moe.a2a.comm.shm.ShmLayout.slot;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.CollectiveArgs;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangeErrors;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ExchangeTimeoutException;
import moe.a2a.comm.InboundSink;
import moe.a2a.comm.PeerFailedException;
import moe.a2a.comm.SegmentReader;
import moe.a2a.comm.SegmentWriter;
import moe.a2a.comm.Segments;
import moe.a2a.comm.Transport;
import org.jspecify.annotations.Nullable;

/**
 * Shared-memory communicator: the ranks of a group are processes of one host, and every row moves
 * through files in a tmpfs directory ({@code /dev/shm} by default) that the ranks map with FFM. No
 * socket is involved; the caller hands every rank the same directory, group id and size ({@link
 * ShmConfig}).
 *
 * <h2>Layout</h2>
 *
 * Each rank owns two files ({@link ShmFiles} names them): a <em>control</em> file and a
 * <em>data</em> file. The control file holds a header (magic, owner pid, group id, size, rank, a
 * heartbeat counter, and the group's abort notice: a state word, the aborting rank and its reason)
 * and one slot per source rank, three 128-byte lines each ({@link ShmLayout}): the receiver's line
 * (where and how many bytes it is ready to take, for all-to-all-v and for point-to-point, and the
 * sequence number it is ready for), and two lines of the source's (what it sent and the sequence
 * number it completed; counts and barrier signals). The data file is this rank's receive region;
 * every peer maps it and writes into it.
 *
 * <h2>Why regions sized by the exchange, not streamed mailboxes</h2>
 *
 * Before every exchange both sides know its sizes: all-to-all-v's counts, and point-to-point's
 * {@code recvBytes}. So the receiver lays out one segment per source in its region (growing the
 * region first, into a new data file of the next generation, when the exchange needs more; it grows
 * geometrically and then stays) and announces each source's offset; the source writes its bytes
 * straight there. That is one copy per byte, as in-process, and the receiver's {@link
 * SegmentReader} and {@link InboundSink} read the segments where they lie: the combine of a step
 * and every block of a ring all-reduce move with one copy, the reduction reading from shared
 * memory. A fixed mailbox streamed in chunks could not give a reader or sink a whole segment where
 * it lies without a second, staging copy, and the contract hands them whole segments. A dispatch
 * receives in place ({@link #allToAllVInPlace}): the region is laid out as a receive buffer, every
 * source's segment (this rank's own too) at its running sum, and the caller reads the rows there
 * until its next call. Only a plain receive buffer costs a second copy, out of the region (the
 * buffer is the caller's, outside shared memory); sources' segments are copied out as each arrives,
 * while the others are still writing.
 *
 * <h2>Protocol</h2>
 *
 * Collectives carry a sequence number {@code k}, the same on every rank (they are called in the
 * same order). All-to-all-v: every rank publishes, for each source, offset, expected bytes and
 * region generation, then releases {@code A2A_READY = k}; each source waits for that, checks the
 * counts agree, writes its segment, then releases {@code A2A_SENT} and {@code A2A_DONE = k}; the
 * receiver waits for every source's {@code A2A_DONE}. A region is reused only after its receiver
 * saw every source done, so no trailing barrier is needed, and a send buffer is free once its
 * writes are done. Counts and the barrier: each source writes its value into the receiver's slot
 * and releases a sequence word, in one of two sets by {@code k}'s parity (a source cannot get two
 * exchanges ahead of a receiver). Point-to-point: per ordered pair the receiver publishes the
 * message number it is ready for and how long it expects it, the source writes and releases {@code
 * P2P_DONE}; a length mismatch is reported by both sides, naming both lengths.
 *
 * <h2>Synchronisation and failures</h2>
 *
 * Sequence words are written with release and read with acquire semantics ({@link VarHandle} on the
 * mapped segments). A waiting rank spins briefly, then yields, then parks with a growing pause
 * (under 0.3 ms); every pause it reads the group's abort notice in its own control file, and every
 * 2 ms it checks the peers it waits on: a peer whose process is gone, or whose heartbeat (advanced
 * by a daemon thread of every live rank) has stalled for {@link ShmConfig#heartbeatTimeoutNs}, is
 * named in a {@link PeerFailedException}; a peer still missing at the group's timeout is named in
 * an {@link ExchangeTimeoutException}. Any failure aborts the group: the rank writes the abort
 * notice into every rank's control file, so every rank's current and later calls fail at once,
 * naming the rank that aborted and its reason. {@link #close} aborts the group too, and unlinks
 * this rank's files; {@link #open} first deletes the files that dead processes left ({@link
 * ShmFiles#cleanStale}).
 *
 * <p>Owned by the rank's thread ({@link #abort} may come from any thread).
 */
public final class ShmCommunicator implements Communicator {
    private static final VarHandle LONG = ShmControl.LONG;
    private static final ValueLayout.OfLong WORD = ShmControl.WORD;

    private final ShmConfig config;
    private final int rank;
    private final int size;
    private final ShmRegions regions;
    private final ShmControl control;
    private final MemorySegment own;
    private final ShmWait wait;
    private final boolean[] pending;

    /** Point-to-point messages sent to, and received from, each peer. */
    private final long[] sentTo;

    private final long[] receivedFrom;

    /** The sequence number of the last collective. */
    private long seq;

    // scratch, reused so that an exchange allocates nothing
    private final long[] sendAt;
    private final long[] recvAt;
    private final long[] regionAt;
    private final @Nullable ByteBuffer[] segments;
    private final long[] offsets;

    private volatile @Nullable Throwable localFailure;
    private volatile boolean closed;

    private ShmCommunicator(ShmConfig config) throws IOException {
        this.config = config;
        this.rank = config.rank();
        this.size = config.size();
        final int n = size;
        this.sentTo = new long[n];
        this.receivedFrom = new long[n];
        this.sendAt = new long[n];
        this.recvAt = new long[n];
        this.regionAt = new long[n];
        this.segments = new ByteBuffer[n];
        this.offsets = new long[n];
        // the data file first: a peer that sees the control file finds generation 0 there
        this.regions =
                new ShmRegions(
                        config.directory(), config.groupId(), rank, n, config.initialRegionBytes());
        try {
            this.control = new ShmControl(config);
        } catch (IOException | RuntimeException e) {
            regions.close();
            throw e;
        }
        this.own = control.own();
        this.wait =
                new ShmWait(
                        rank,
                        n,
                        config.timeoutNs(),
                        new ShmWait.Checks() {
                            @Override
                            public void throwIfAborted() {
                                control.throwIfAborted(localFailure);
                            }

                            @Override
                            public void checkAlive(int peer, long now) {
                                control.checkAlive(peer, now);
                            }
                        });
        this.pending = wait.pending;
    }

    /**
     * Joins the group: deletes stale files in the directory ({@link ShmFiles#cleanStale}), creates
     * this rank's files, and maps every peer's control file once it appears.
     *
     * @throws ExchangeTimeoutException naming the first peer whose files did not appear in time
     */
    public static ShmCommunicator open(ShmConfig config) {
        ShmFiles.cleanStale(config.directory());
        ShmCommunicator comm;
        try {
            comm = new ShmCommunicator(config);
        } catch (IOException e) {
            throw new A2aException(
                    "cannot create shared-memory files: rank="
                            + config.rank()
                            + ", dir="
                            + config.directory(),
                    e);
        }
        try {
            comm.join();
        } catch (RuntimeException e) {
            comm.abort(e);
            comm.close();
            throw e;
        }
        return comm;
    }

    private void join() {
        final long deadline = System.nanoTime() + config.timeoutNs();
        for (int p = 0; p < size; p++) {
            long pauseNs = TimeUnit.MICROSECONDS.toNanos(200);
            while (p != rank && !control.tryMap(p)) {
                control.throwIfAborted(localFailure);
                if (System.nanoTime() - deadline >= 0) {
                    throw new ExchangeTimeoutException(
                            -1, ExchangePhase.BARRIER, rank, p, config.timeoutNs());
                }
                LockSupport.parkNanos(pauseNs);
                pauseNs = Math.min(pauseNs * 2, TimeUnit.MILLISECONDS.toNanos(10));
            }
        }
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public Transport transport() {
        return Transport.SHM;
    }

    @Override
    public void allToAllCounts(
            long step, ExchangePhase phase, long[] sendCounts, long[] recvCounts) {
        Segments.checkLength("sendCounts", sendCounts, size);
        Segments.checkLength("recvCounts", recvCounts, size);
        signal(step, phase, sendCounts, recvCounts);
    }

    @Override
    public void barrier() {
        signal(-1, ExchangePhase.BARRIER, null, null);
    }

    /**
     * Sends {@code values[dst]} to every peer and receives theirs into {@code received}; with null
     * arrays, a barrier.
     */
    private void signal(
            long step, ExchangePhase phase, long @Nullable [] values, long @Nullable [] received) {
        checkOpen();
        final long k = ++seq;
        final long parity = (k & 1) * SIGNAL_PARITY_STRIDE;
        final long mine = values == null ? 0 : values[rank];
        try {
            for (int dst = 0; dst < size; dst++) {
                if (dst != rank) {
                    MemorySegment peer = control.peer(dst);
                    long at = slot(rank) + parity;
                    peer.set(WORD, at + SIGNAL_VALUE, values == null ? 0 : values[dst]);
                    LONG.setRelease(peer, at + SIGNAL_SEQ, k);
                }
            }
            int remaining = wait.all(step, phase);
            while (remaining > 0) {
                boolean progressed = false;
                for (int src = 0; src < size; src++) {
                    long at = slot(src) + parity;
                    if (pending[src] && (long) LONG.getAcquire(own, at + SIGNAL_SEQ) == k) {
                        if (received != null) {
                            received[src] = own.get(WORD, at + SIGNAL_VALUE);
                        }
                        pending[src] = false;
                        remaining--;
                        progressed = true;
                    }
                }
                wait.pass(progressed);
            }
            if (received != null) {
                received[rank] = mine;
            }
        } catch (RuntimeException e) {
            abort(e);
            throw e;
        }
    }

    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        exchange(step, phase, send, null, sendCounts, recv, null, recvCounts, false);
    }

    /** The writer writes straight into the peers' receive regions (and this rank's own buffer). */
    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            SegmentWriter writer,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        exchange(step, phase, null, writer, sendCounts, recv, null, recvCounts, false);
    }

    /**
     * Receives in place: the peers write their segments straight into this rank's region at the
     * offsets a receive buffer would have (no alignment gap between sources) and the writer writes
     * this rank's own segment there too, so every byte is copied once.
     */
    @Override
    public boolean receivesInPlace() {
        return true;
    }

    /**
     * {@inheritDoc} The buffer is a view of this rank's receive region, valid until this rank's
     * next call (the next exchange may lay out or grow the region).
     */
    @Override
    public ByteBuffer allToAllVInPlace(
            long step,
            ExchangePhase phase,
            SegmentWriter writer,
            long[] sendCounts,
            long[] recvCounts) {
        exchange(step, phase, null, writer, sendCounts, null, null, recvCounts, true);
        return regions.data();
    }

    /** The reader reads every source's segment in this rank's receive region, where it landed. */
    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            SegmentReader reader,
            long[] recvCounts) {
        exchange(step, phase, send, null, sendCounts, null, reader, recvCounts, false);
    }

    private void exchange(
            long step,
            ExchangePhase phase,
            @Nullable ByteBuffer send,
            @Nullable SegmentWriter writer,
            long[] sendCounts,
            @Nullable ByteBuffer recv,
            @Nullable SegmentReader reader,
            long[] recvCounts,
            boolean inPlace) {
        Segments.checkLength("sendCounts", sendCounts, size);
        Segments.checkLength("recvCounts", recvCounts, size);
        checkOpen();
        final long k = ++seq;
        try {
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
        } catch (RuntimeException e) {
            abort(e);
            throw e;
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

    /**
     * Announces to {@code from} that this rank is ready for its next message, writes the outgoing
     * one into {@code to}'s region once {@code to} is ready for it, then hands the incoming one to
     * {@code sink} where it landed, in this rank's region.
     */
    @Override
    public void sendRecv(
            int to,
            ByteBuffer send,
            int sendOffset,
            int sendBytes,
            int from,
            int recvBytes,
            InboundSink sink) {
        CollectiveArgs.checkPeer("to", to, size);
        CollectiveArgs.checkPeer("from", from, size);
        if (to != NONE && sendBytes < 0) {
            throw new IllegalArgumentException("sendBytes: " + sendBytes + " (expected: >= 0)");
        }
        if (from != NONE && recvBytes < 0) {
            throw new IllegalArgumentException("recvBytes: " + recvBytes + " (expected: >= 0)");
        }
        if ((to == rank) != (from == rank)) {
            throw new IllegalArgumentException(
                    "to: "
                            + to
                            + ", from: "
                            + from
                            + " (expected: this rank as both or neither; a message to itself"
                            + " is sent and received in one call)");
        }
        checkOpen();
        try {
            if (to == rank) {
                if (sendBytes != recvBytes) {
                    throw ExchangeErrors.lengthMismatch(rank, rank, sendBytes, recvBytes);
                }
                sink.accept(send, sendOffset, sendBytes);
                return;
            }
            long incoming = 0;
            if (from != NONE) {
                incoming = ++receivedFrom[from];
                regions.ensure(recvBytes);
                long at = slot(from);
                own.set(WORD, at + P2P_EXPECT, recvBytes);
                own.set(WORD, at + P2P_GEN, regions.gen());
                LONG.setRelease(own, at + P2P_READY, incoming);
            }
            if (to != NONE) {
                long outgoing = ++sentTo[to];
                MemorySegment peer = control.peer(to);
                long at = slot(rank);
                wait.one(to);
                while ((long) LONG.getAcquire(peer, at + P2P_READY) != outgoing) {
                    wait.idle();
                }
                long expected = peer.get(WORD, at + P2P_EXPECT);
                if (expected == sendBytes && sendBytes > 0) {
                    regions.peer(to, peer.get(WORD, at + P2P_GEN))
                            .put((int) DATA_AT, send, sendOffset, sendBytes);
                }
                peer.set(WORD, at + P2P_SENT, sendBytes);
                LONG.setRelease(peer, at + P2P_DONE, outgoing);
                if (expected != sendBytes) {
                    throw ExchangeErrors.lengthMismatch(rank, to, sendBytes, expected);
                }
            }
            if (from != NONE) {
                long at = slot(from);
                wait.one(from);
                while ((long) LONG.getAcquire(own, at + P2P_DONE) != incoming) {
                    wait.idle();
                }
                long sent = own.get(WORD, at + P2P_SENT);
                if (sent != recvBytes) {
                    throw ExchangeErrors.lengthMismatch(from, rank, sent, recvBytes);
                }
                sink.accept(regions.view(), (int) DATA_AT, recvBytes);
            }
        } catch (RuntimeException e) {
            abort(e);
            throw e;
        }
    }

    /**
     * Writes the abort notice into every rank's control file (the first notice in each wins), so
     * that every rank's current and later calls fail naming this rank and {@code cause}'s message.
     */
    @Override
    public void abort(Throwable cause) {
        synchronized (this) {
            if (localFailure == null) {
                localFailure = cause;
            }
        }
        if (!closed) {
            control.raiseAbort(String.valueOf(cause.getMessage()));
        }
    }

    /**
     * Aborts the group (peers learn at once), stops the heartbeat, unmaps every file and deletes
     * this rank's own.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            abort(new A2aException("communicator closed: rank=" + rank));
            closed = true;
        }
        control.close();
        regions.close();
    }

    private void checkOpen() {
        if (closed) {
            throw new PeerFailedException(
                    rank, new A2aException("communicator closed: rank=" + rank));
        }
        control.throwIfAborted(localFailure);
    }
}
