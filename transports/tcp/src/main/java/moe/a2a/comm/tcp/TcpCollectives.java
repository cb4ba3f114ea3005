package moe.a2a.comm.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import java.nio.ByteBuffer;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.ExchangeErrors;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.SegmentReader;
import moe.a2a.comm.SegmentWriter;
import moe.a2a.comm.Segments;

/**
 * One rank's collectives over its connections: the all-to-all of counts (one COUNT frame to and
 * from every peer) and all-to-all-v (post the receive regions, send each peer its rows, copy this
 * rank's own, wait for every peer's rows and then for every write), with the adapters that give a
 * {@link SegmentWriter} a staging buffer and a {@link SegmentReader} a receive buffer, both reused.
 *
 * <p>Owned by the rank thread.
 */
final class TcpCollectives {
    private final int rank;
    private final int size;
    private final long timeoutNs;
    private final PeerLinks links;
    private final Channel[] peers;
    private final DataFrames frames;
    private final ReceiveRegions regions;
    private final FrameWaits waits;

    /** Per peer, the sequence number of the next frame to it, and of the next frame from it. */
    private final long[] sendSeq;

    private final long[] recvSeq;

    /** The sequence numbers of the frames from each peer the exchange in progress takes. */
    private final long[] recvOps;

    private final long[] sendOffsets;
    private final long[] recvOffsets;
    private ByteBuffer staging = ByteBuffer.allocateDirect(0);
    private ByteBuffer inbound = ByteBuffer.allocateDirect(0);
    private final ByteBuffer[] readSegments;
    private final long[] readOffsets;

    /**
     * @param sendSeq per peer, the sequence number of the next frame to it (shared with messages)
     * @param recvSeq per peer, the sequence number of the next frame from it (shared likewise)
     */
    TcpCollectives(
            TcpConfig config,
            PeerLinks links,
            DataFrames frames,
            ReceiveRegions regions,
            FrameWaits waits,
            long[] sendSeq,
            long[] recvSeq) {
        final int n = config.size();
        this.rank = config.rank();
        this.size = n;
        this.timeoutNs = config.timeoutNs();
        this.links = links;
        this.peers = links.channels();
        this.frames = frames;
        this.regions = regions;
        this.waits = waits;
        this.sendSeq = sendSeq;
        this.recvSeq = recvSeq;
        this.recvOps = new long[n];
        this.sendOffsets = new long[n];
        this.recvOffsets = new long[n];
        this.readSegments = new ByteBuffer[n];
        this.readOffsets = new long[n];
    }

    /** Sends {@code sendCounts[p]} to every peer {@code p} and receives theirs. */
    void counts(long step, ExchangePhase phase, long[] sendCounts, long[] recvCounts) {
        final int n = size;
        Segments.checkLength("sendCounts", sendCounts, n);
        Segments.checkLength("recvCounts", recvCounts, n);
        links.throwIfFailed();
        final long deadline = System.nanoTime() + timeoutNs;
        for (int p = 0; p < n; p++) {
            if (p != rank) {
                ByteBuf frame = peers[p].alloc().buffer(FrameHeader.BYTES + Long.BYTES);
                FrameHeader.write(
                        frame, FrameHeader.COUNT, phase.ordinal(), step, sendSeq[p]++, Long.BYTES);
                peers[p].writeAndFlush(frame.writeLong(sendCounts[p]));
            }
        }
        recvCounts[rank] = sendCounts[rank];
        for (int p = 0; p < n; p++) {
            if (p != rank) {
                Frame frame =
                        waits.await(p, step, phase, recvSeq[p]++, FrameHeader.COUNT, deadline);
                recvCounts[p] = frame.payload().readLong();
                frame.release();
            }
        }
    }

    /** Sends from {@code send} and receives into {@code recv}. */
    void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        exchange(step, phase, send, null, sendCounts, recv, recvCounts);
    }

    /**
     * Posts this rank's receive regions, then sends each peer its rows (written into {@code send}
     * by {@code writer} just before, when there is one, so that the socket moves one peer's rows
     * while the next peer's are written), copies its own rows, and waits for every peer's.
     */
    private void exchange(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            SegmentWriter writer,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        final int n = size;
        final int me = rank;
        Segments.checkLength("sendCounts", sendCounts, n);
        Segments.checkLength("recvCounts", recvCounts, n);
        links.throwIfFailed();
        final long deadline = System.nanoTime() + timeoutNs;
        long s = 0;
        long r = 0;
        for (int p = 0; p < n; p++) {
            sendOffsets[p] = s;
            recvOffsets[p] = r;
            s += sendCounts[p];
            r += recvCounts[p];
        }
        if (r > recv.capacity()) {
            throw new A2aException(
                    "receive buffer too small: rank="
                            + me
                            + ", needBytes="
                            + r
                            + ", capacityBytes="
                            + recv.capacity());
        }
        if (sendCounts[me] != recvCounts[me]) {
            links.fail(ExchangeErrors.countMismatch(me, me, sendCounts[me], recvCounts[me]));
        }
        for (int p = 0; p < n; p++) {
            if (p != me) {
                recvOps[p] = recvSeq[p]++;
            }
        }
        try {
            regions.post(recvOps, phase, recv, recvOffsets, recvCounts, me);
        } catch (A2aException e) {
            regions.withdrawAll();
            links.fail(e);
        }
        for (int i = 1; i < n; i++) {
            int p = (me + i) % n;
            if (writer != null && sendCounts[p] > 0) {
                writer.write(p, send, (int) sendOffsets[p]);
            }
            frames.send(p, phase, step, sendSeq[p]++, send, sendOffsets[p], sendCounts[p]);
        }
        if (writer == null) {
            recv.put((int) recvOffsets[me], send, (int) sendOffsets[me], (int) sendCounts[me]);
        } else if (sendCounts[me] > 0) {
            writer.write(me, recv, (int) recvOffsets[me]);
        }
        try {
            for (int i = 1; i < n; i++) {
                int p = (me - i + n) % n;
                Frame frame = waits.await(p, step, phase, recvOps[p], FrameHeader.DATA, deadline);
                try {
                    regions.take(frame, p, me, recv, recvOffsets[p], recvCounts[p]);
                } catch (A2aException e) {
                    links.fail(e);
                } finally {
                    frame.release();
                }
            }
        } finally {
            regions.withdrawAll();
        }
        for (int p = 0; p < n; p++) {
            if (p != me) {
                waits.awaitWrite(p, step, phase, deadline);
            }
        }
    }

    /**
     * Has each peer's segment written into a staging buffer of its own (reused) just before it is
     * sent, and this rank's own segment straight into {@code recv}.
     */
    void allToAllV(
            long step,
            ExchangePhase phase,
            SegmentWriter writer,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        long total = 0;
        for (long c : sendCounts) {
            total += c;
        }
        if (staging.capacity() < total) {
            staging =
                    ByteBuffer.allocateDirect((int) total).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        }
        exchange(step, phase, staging, writer, sendCounts, recv, recvCounts);
    }

    /** Receives into a buffer of its own (reused), then hands it to {@code reader}. */
    void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            SegmentReader reader,
            long[] recvCounts) {
        long total = 0;
        for (int p = 0; p < recvCounts.length; p++) {
            readOffsets[p] = total;
            total += recvCounts[p];
        }
        if (inbound.capacity() < total) {
            inbound =
                    ByteBuffer.allocateDirect((int) total).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        }
        allToAllV(step, phase, send, sendCounts, inbound, recvCounts);
        java.util.Arrays.fill(readSegments, inbound);
        reader.read(readSegments, readOffsets);
    }
}
