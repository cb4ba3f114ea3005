package moe.a2a.comm.local;

import java.nio.ByteBuffer;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.CollectiveArgs;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangeErrors;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.InboundSink;
import moe.a2a.comm.SegmentReader;
import moe.a2a.comm.SegmentWriter;
import moe.a2a.comm.Segments;
import moe.a2a.comm.Transport;

/**
 * In-process communicator: a rank copies each outgoing segment straight into the peer's receive
 * buffer, so every row is copied once; the writer gets every destination at once ({@link
 * SegmentWriter#writeAll}). Each collective is two barrier rounds: one after the receive buffers
 * are published, one after every rank has written.
 *
 * <p>Owned by one rank thread.
 */
public final class LocalCommunicator implements Communicator {
    private final LocalGroup group;
    private final int rank;
    private final SendBufferCopier copier;
    private final ByteBuffer[] readSegments;
    private final long[] readOffsets;
    private final ByteBuffer[] writeTargets;
    private final long[] writeOffsets;

    LocalCommunicator(LocalGroup group, int rank) {
        this.group = group;
        this.rank = rank;
        this.copier = new SendBufferCopier(group.size());
        this.readSegments = new ByteBuffer[group.size()];
        this.readOffsets = new long[group.size()];
        this.writeTargets = new ByteBuffer[group.size()];
        this.writeOffsets = new long[group.size()];
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return group.size();
    }

    @Override
    public Transport transport() {
        return LocalTransportProvider.LOCAL;
    }

    @Override
    public void allToAllCounts(
            long step, ExchangePhase phase, long[] sendCounts, long[] recvCounts) {
        final int n = group.size();
        Segments.checkLength("sendCounts", sendCounts, n);
        Segments.checkLength("recvCounts", recvCounts, n);
        System.arraycopy(sendCounts, 0, group.counts[rank], 0, n);
        group.await(rank, step, phase);
        for (int src = 0; src < n; src++) {
            recvCounts[src] = group.counts[src][rank];
        }
        // Nobody may overwrite its row of the matrix before every rank has read its column.
        group.await(rank, step, phase);
    }

    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        Segments.checkLength("sendCounts", sendCounts, group.size());
        copier.send = send;
        publish(sendCounts, copier.offsets, copier.lengths);
        exchange(step, phase, copier, sendCounts, recv, recvCounts);
    }

    /** Copies segments out of a packed send buffer; reused, so an exchange allocates nothing. */
    private static final class SendBufferCopier implements SegmentWriter {
        final long[] offsets;
        final long[] lengths;
        ByteBuffer send;

        SendBufferCopier(int size) {
            this.offsets = new long[size];
            this.lengths = new long[size];
        }

        @Override
        public void write(int peer, ByteBuffer dst, int dstOffset) {
            dst.put(dstOffset, send, (int) offsets[peer], (int) lengths[peer]);
        }
    }

    /** Each segment is written once, by this rank, straight into the peer's receive buffer. */
    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            SegmentWriter writer,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        exchange(step, phase, writer, sendCounts, recv, recvCounts);
    }

    /** Each source's segment is read where the source wrote it: nothing is copied. */
    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            SegmentReader reader,
            long[] recvCounts) {
        final int n = group.size();
        Segments.checkLength("sendCounts", sendCounts, n);
        Segments.checkLength("recvCounts", recvCounts, n);
        publish(sendCounts, group.sendOffsets[rank], group.sendLengths[rank]);
        group.sendBuffers[rank] = send;
        group.await(rank, step, phase);
        try {
            for (int src = 0; src < n; src++) {
                if (group.sendLengths[src][rank] != recvCounts[src]) {
                    throw ExchangeErrors.countMismatch(
                            src, rank, group.sendLengths[src][rank], recvCounts[src]);
                }
                readSegments[src] = group.sendBuffers[src];
                readOffsets[src] = group.sendOffsets[src][rank];
            }
            reader.read(readSegments, readOffsets);
        } catch (RuntimeException e) {
            group.fail(e);
            throw e;
        }
        // Sources may reuse their send buffers only once every reader is done.
        group.await(rank, step, phase);
    }

    private void exchange(
            long step,
            ExchangePhase phase,
            SegmentWriter writer,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        final int n = group.size();
        Segments.checkLength("sendCounts", sendCounts, n);
        Segments.checkLength("recvCounts", recvCounts, n);
        final long offset = publish(recvCounts, group.recvOffsets[rank], group.recvLengths[rank]);
        if (offset > recv.capacity()) {
            throw new A2aException(
                    "receive buffer too small: rank="
                            + rank
                            + ", needBytes="
                            + offset
                            + ", capacityBytes="
                            + recv.capacity());
        }
        group.recvBuffers[rank] = recv;
        group.await(rank, step, phase);
        try {
            for (int dst = 0; dst < n; dst++) {
                final long len = sendCounts[dst];
                final long expected = group.recvLengths[dst][rank];
                if (len != expected) {
                    throw ExchangeErrors.countMismatch(rank, dst, len, expected);
                }
                writeTargets[dst] = group.recvBuffers[dst];
                writeOffsets[dst] = group.recvOffsets[dst][rank];
            }
            writer.writeAll(writeTargets, writeOffsets, sendCounts);
        } catch (RuntimeException e) {
            group.fail(e);
            throw e;
        }
        group.await(rank, step, phase);
    }

    @Override
    public void barrier() {
        group.await(rank, -1, ExchangePhase.BARRIER);
    }

    /**
     * Posts the outgoing message in the mailbox to {@code to}, consumes the one from {@code from}
     * where its sender left it, then waits until {@code to} has consumed this rank's.
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
        CollectiveArgs.checkPeer("to", to, group.size());
        CollectiveArgs.checkPeer("from", from, group.size());
        final long timeoutNs = group.timeoutNs();
        final long deadline = System.nanoTime() + timeoutNs;
        try {
            if (to != NONE) {
                group.mailbox(rank, to).post(send, sendOffset, sendBytes);
            }
            if (from != NONE) {
                group.mailbox(from, rank).take(recvBytes, sink, deadline, timeoutNs);
            }
            if (to != NONE) {
                group.mailbox(rank, to).awaitTaken(deadline, timeoutNs);
            }
        } catch (RuntimeException e) {
            group.fail(e);
            throw e;
        }
    }

    @Override
    public void abort(Throwable cause) {
        group.fail(cause);
    }

    @Override
    public void close() {
        group.fail(new A2aException("communicator closed: rank=" + rank));
    }

    /**
     * Publishes where each peer's segment lies (exclusive prefix sums of {@code counts}); returns
     * the total.
     */
    private static long publish(long[] counts, long[] offsets, long[] lengths) {
        System.arraycopy(counts, 0, lengths, 0, counts.length);
        return Segments.offsets(counts, offsets);
    }
}
