package moe.a2a.comm.shm;

import java.io.IOException;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.CollectiveArgs;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ExchangeTimeoutException;
import moe.a2a.comm.InboundSink;
import moe.a2a.comm.PeerFailedException;
import moe.a2a.comm.PlaneUnavailableException;
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
 * <p>This class joins the group, checks arguments, numbers the collectives and aborts the group on
 * any failure; {@link ShmSignals} (counts, barrier), {@link ShmAllToAll} and {@link
 * ShmPointToPoint} move the data, each waiting through the one {@link ShmWait}.
 *
 * <p>Owned by the rank's thread ({@link #abort} may come from any thread).
 */
public final class ShmCommunicator implements Communicator {
    private final ShmConfig config;
    private final int rank;
    private final int size;
    private final ShmRegions regions;
    private final ShmControl control;
    private final ShmSignals signals;
    private final ShmAllToAll allToAll;
    private final ShmPointToPoint pointToPoint;

    /** The sequence number of the last collective. */
    private long seq;

    private volatile @Nullable Throwable localFailure;
    private volatile boolean closed;

    private ShmCommunicator(ShmConfig config) throws IOException {
        this.config = config;
        this.rank = config.rank();
        this.size = config.size();
        final int n = size;
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
        ShmWait wait =
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
        this.signals = new ShmSignals(rank, n, control, wait);
        this.allToAll = new ShmAllToAll(rank, n, regions, control, wait);
        this.pointToPoint = new ShmPointToPoint(rank, n, regions, control, wait);
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
            throw new PlaneUnavailableException(
                    "cannot create shared-memory files: rank="
                            + config.rank()
                            + ", dir="
                            + config.directory()
                            + ": "
                            + e.getMessage(),
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
        return ShmTransportProvider.SHM;
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
     * Numbers the next collective and runs it: sends {@code values[dst]} to every peer and receives
     * theirs into {@code received}; with null arrays, a barrier.
     */
    private void signal(
            long step, ExchangePhase phase, long @Nullable [] values, long @Nullable [] received) {
        checkOpen();
        final long k = ++seq;
        try {
            signals.exchange(step, phase, k, values, received);
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
            allToAll.exchange(
                    step, phase, k, send, writer, sendCounts, recv, reader, recvCounts, inPlace);
        } catch (RuntimeException e) {
            abort(e);
            throw e;
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
            pointToPoint.sendRecv(to, send, sendOffset, sendBytes, from, recvBytes, sink);
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
