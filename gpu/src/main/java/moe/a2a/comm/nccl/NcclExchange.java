package moe.a2a.comm.nccl;

import java.nio.ByteBuffer;
import java.util.Arrays;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.SegmentReader;
import moe.a2a.comm.SegmentWriter;
import moe.a2a.comm.Segments;
import moe.a2a.gpu.CudaMemory;

/**
 * One rank's all-to-all-v over NCCL, in its phases: the counts exchange (a group of 8-byte
 * exchanges), the layout of both sides' segments from the counts, and the exchange itself, one
 * group of {@code ncclSend}/{@code ncclRecv} per peer; host buffers (or a writer's segments, or a
 * reader's) go through the pinned staging, device buffers straight on the rank's stream. The
 * offsets are reused so that an exchange allocates nothing.
 *
 * <p>Owned by the rank's thread.
 */
final class NcclExchange {
    private static final int COUNT_BYTES = Long.BYTES;

    private final NcclBackend backend;
    private final NcclLauncher launcher;
    private final int rank;
    private final int size;
    private final long[] sendOffsets;
    private final long[] recvOffsets;
    private final long[] countOffsets;
    private final long[] countBytes;
    private final ByteBuffer[] readSegments;
    private final long[] fixedBytes;

    NcclExchange(NcclBackend backend, NcclLauncher launcher) {
        this.backend = backend;
        this.launcher = launcher;
        this.rank = backend.rank();
        this.size = backend.size();
        this.sendOffsets = new long[size];
        this.recvOffsets = new long[size];
        this.countOffsets = new long[size];
        this.countBytes = new long[size];
        this.readSegments = new ByteBuffer[size];
        this.fixedBytes = new long[size];
        for (int p = 0; p < size; p++) {
            countOffsets[p] = (long) p * COUNT_BYTES;
            countBytes[p] = COUNT_BYTES;
        }
    }

    /** Sends {@code sendCounts[p]} to every peer {@code p} and receives theirs. */
    void counts(long step, ExchangePhase phase, long[] sendCounts, long[] recvCounts) {
        Segments.checkLength("sendCounts", sendCounts, size);
        Segments.checkLength("recvCounts", recvCounts, size);
        launcher.checkOpen();
        ByteBuffer out = backend.sendStaging((long) size * COUNT_BYTES);
        for (int p = 0; p < size; p++) {
            out.putLong(p * COUNT_BYTES, sendCounts[p]);
        }
        launcher.run(
                step, phase, countOffsets, countBytes, countOffsets, countBytes, "counts exchange");
        ByteBuffer in = backend.recvStaging((long) size * COUNT_BYTES);
        for (int p = 0; p < size; p++) {
            recvCounts[p] = in.getLong(p * COUNT_BYTES);
        }
    }

    /** From {@code send}, staged, into {@code recv}. */
    void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        stage(send, sendCounts, recvCounts);
        long recvTotal = exchange(step, phase, sendCounts, recvCounts);
        recv.put(0, backend.recvStaging(recvTotal), 0, (int) recvTotal);
    }

    /** The writer writes each peer's segment into the pinned staging. */
    void allToAllV(
            long step,
            ExchangePhase phase,
            SegmentWriter writer,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        long sendTotal = prepare(sendCounts, recvCounts, Integer.MAX_VALUE);
        ByteBuffer staging = backend.sendStaging(sendTotal);
        for (int p = 0; p < size; p++) {
            if (sendCounts[p] > 0) {
                writer.write(p, staging, (int) sendOffsets[p]);
            }
        }
        long recvTotal = exchange(step, phase, sendCounts, recvCounts);
        recv.put(0, backend.recvStaging(recvTotal), 0, (int) recvTotal);
    }

    /** The reader reads every source's segment in the pinned staging. */
    void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            SegmentReader reader,
            long[] recvCounts) {
        stage(send, sendCounts, recvCounts);
        long recvTotal = exchange(step, phase, sendCounts, recvCounts);
        Arrays.fill(readSegments, backend.recvStaging(recvTotal));
        reader.read(readSegments, recvOffsets);
    }

    /**
     * All-to-all-v between device buffers on this rank's stream: {@code send}'s segment for peer
     * {@code p} (at the exclusive prefix sum of {@code sendCounts}) lands in peer {@code p}'s
     * {@code recv} at this rank's segment. Counts as for {@link #allToAllV(long, ExchangePhase,
     * ByteBuffer, long[], ByteBuffer, long[])}; the buffers must hold their totals.
     */
    void allToAllVDevice(
            long step,
            ExchangePhase phase,
            CudaMemory send,
            long[] sendCounts,
            CudaMemory recv,
            long[] recvCounts) {
        prepare(sendCounts, recvCounts, Long.MAX_VALUE);
        try {
            int launched =
                    backend.exchangeDevice(
                            send, sendOffsets, sendCounts, recv, recvOffsets, recvCounts);
            if (NcclResults.isError(launched)) {
                throw NcclResults.failure(
                        launched, "device all-to-all-v (ncclGroupEnd)", rank, backend.lastError());
            }
            launcher.await(step, phase, "device all-to-all-v");
        } catch (A2aException e) {
            throw launcher.fail(e);
        }
    }

    /**
     * Enqueues one group of a send of {@code bytesPerPeer} bytes to every rank (peer {@code p}'s
     * from {@code send} at {@code p * bytesPerPeer}) and a receive of as many from every rank (into
     * {@code recv} likewise), this rank included, and returns once the group is on the stream
     * without waiting for it to run: what a step captured as a CUDA graph needs. {@link
     * NcclCommunicator#awaitEnqueued} waits for it.
     */
    void enqueueAllToAllDevice(
            long step, ExchangePhase phase, CudaMemory send, CudaMemory recv, long bytesPerPeer) {
        Arrays.fill(fixedBytes, bytesPerPeer);
        prepare(fixedBytes, fixedBytes, Long.MAX_VALUE);
        enqueueFixed(step, phase, send, sendOffsets, recv, recvOffsets);
    }

    /**
     * As {@link #enqueueAllToAllDevice(long, ExchangePhase, CudaMemory, CudaMemory, long)}, peer
     * {@code p}'s segment at {@code peerOffsets[p]} in both buffers.
     */
    void enqueueAllToAllDevice(
            long step,
            ExchangePhase phase,
            CudaMemory send,
            CudaMemory recv,
            long bytesPerPeer,
            long[] peerOffsets) {
        Segments.checkLength("peerOffsets", peerOffsets, size);
        if (bytesPerPeer < 0) {
            throw new IllegalArgumentException(
                    "bytesPerPeer: " + bytesPerPeer + " (expected: >= 0)");
        }
        launcher.checkOpen();
        Arrays.fill(fixedBytes, bytesPerPeer);
        enqueueFixed(step, phase, send, peerOffsets, recv, peerOffsets);
    }

    private void enqueueFixed(
            long step,
            ExchangePhase phase,
            CudaMemory send,
            long[] sendAt,
            CudaMemory recv,
            long[] recvAt) {
        try {
            int launched =
                    backend.exchangeDevice(send, sendAt, fixedBytes, recv, recvAt, fixedBytes);
            if (NcclResults.isError(launched)) {
                throw NcclResults.failure(
                        launched,
                        "fixed-size device all-to-all (ncclGroupEnd)",
                        rank,
                        backend.lastError());
            }
            launcher.awaitLaunched(step, phase, "fixed-size device all-to-all");
        } catch (A2aException e) {
            throw launcher.fail(e);
        }
    }

    /** Lays out the exchange and copies {@code send} into the pinned staging. */
    private void stage(ByteBuffer send, long[] sendCounts, long[] recvCounts) {
        long sendTotal = prepare(sendCounts, recvCounts, Integer.MAX_VALUE);
        backend.sendStaging(sendTotal).put(0, send, 0, (int) sendTotal);
    }

    /**
     * Checks the counts and lays out both sides' segments; returns the bytes to send. {@code limit}
     * caps each side's total: a {@link ByteBuffer}'s for the pinned staging; device buffers and
     * NCCL's counts are 64-bit.
     */
    private long prepare(long[] sendCounts, long[] recvCounts, long limit) {
        Segments.checkLength("sendCounts", sendCounts, size);
        Segments.checkLength("recvCounts", recvCounts, size);
        launcher.checkOpen();
        long sendTotal = prefix(sendCounts, sendOffsets, "sendCounts");
        long recvTotal = prefix(recvCounts, recvOffsets, "recvCounts");
        if (sendTotal > limit || recvTotal > limit) {
            throw new IllegalArgumentException(
                    "exchange of "
                            + sendTotal
                            + " bytes out, "
                            + recvTotal
                            + " in (expected: at most "
                            + limit
                            + " each way per rank through host staging)");
        }
        return sendTotal;
    }

    /** Runs the exchange laid out by {@link #prepare}; returns the bytes received. */
    private long exchange(long step, ExchangePhase phase, long[] sendCounts, long[] recvCounts) {
        launcher.run(step, phase, sendOffsets, sendCounts, recvOffsets, recvCounts, "all-to-all-v");
        return recvOffsets[size - 1] + recvCounts[size - 1];
    }

    /** Lays out {@code counts} (NCCL takes unsigned sizes, so a negative one is refused here). */
    private static long prefix(long[] counts, long[] offsets, String field) {
        for (int p = 0; p < counts.length; p++) {
            if (counts[p] < 0) {
                throw new IllegalArgumentException(
                        field + "[" + p + "]: " + counts[p] + " (expected: >= 0)");
            }
        }
        return Segments.offsets(counts, offsets);
    }
}
