package moe.a2a.comm.nccl;

import java.nio.ByteBuffer;
import java.util.Arrays;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.InboundSink;
import moe.a2a.comm.SegmentReader;
import moe.a2a.comm.SegmentWriter;
import moe.a2a.comm.Segments;
import moe.a2a.comm.Transport;
import moe.a2a.gpu.CudaMemory;
import org.bytedeco.cuda.cudart.CUstream_st;

/**
 * The {@link Communicator} collectives over NCCL. NCCL has no all-to-all-v, and mismatched counts
 * hang it, so every exchange is one NCCL group of {@code ncclSend}/{@code ncclRecv} per peer with
 * counts both sides learned first from {@link #allToAllCounts} (itself a group of 8-byte
 * exchanges). Host buffers are staged through pinned memory and device buffers on the rank's own
 * stream; every wait goes through {@link NcclWatchdog}, so a dead peer or an NCCL error aborts the
 * communicator and surfaces as an exception instead of a hang.
 *
 * <p>NCCL cannot carry a reason to the peers: when one rank aborts, the others fail at their
 * deadline (in a cluster the control plane's AbortGroup reaches them sooner).
 *
 * <p>Owned by the rank's thread, like every communicator.
 */
public final class NcclCommunicator implements Communicator {
    private static final int COUNT_BYTES = Long.BYTES;

    private final NcclBackend backend;
    private final NcclWatchdog watchdog;
    private final long timeoutNs;
    private final int rank;
    private final int size;
    private final long[] sendOffsets;
    private final long[] recvOffsets;
    private final long[] countOffsets;
    private final long[] countBytes;
    private final long[] barrierCounts;
    private final long[] barrierReceived;
    private final ByteBuffer[] readSegments;
    private volatile A2aException failure;

    NcclCommunicator(NcclBackend backend, NcclWatchdog watchdog, long timeoutNs) {
        this.backend = backend;
        this.watchdog = watchdog;
        this.timeoutNs = timeoutNs;
        this.rank = backend.rank();
        this.size = backend.size();
        this.sendOffsets = new long[size];
        this.recvOffsets = new long[size];
        this.countOffsets = new long[size];
        this.countBytes = new long[size];
        this.barrierCounts = new long[size];
        this.barrierReceived = new long[size];
        this.readSegments = new ByteBuffer[size];
        for (int p = 0; p < size; p++) {
            countOffsets[p] = (long) p * COUNT_BYTES;
            countBytes[p] = COUNT_BYTES;
        }
    }

    /**
     * Joins the NCCL group {@code id} as {@code rank} of {@code size} on CUDA device {@code
     * device}; waits at most {@code timeoutNs} for the other ranks, here and in every collective.
     * Needs a GPU: check {@link moe.a2a.gpu.GpuProbe} first.
     */
    public static NcclCommunicator create(
            NcclUniqueId id, int rank, int size, int device, long timeoutNs) {
        NcclWatchdog watchdog = NcclWatchdog.system();
        return new NcclCommunicator(
                CudaNcclBackend.create(id, rank, size, device, timeoutNs, watchdog),
                watchdog,
                timeoutNs);
    }

    /**
     * A fresh {@code ncclUniqueId} for a new group (rank 0 makes it; the others receive it). Needs
     * libnccl.
     */
    public static NcclUniqueId newUniqueId() {
        return CudaNcclBackend.newUniqueId();
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
        return Transport.NCCL;
    }

    @Override
    public void allToAllCounts(
            long step, ExchangePhase phase, long[] sendCounts, long[] recvCounts) {
        Segments.checkLength("sendCounts", sendCounts, size);
        Segments.checkLength("recvCounts", recvCounts, size);
        checkOpen();
        ByteBuffer out = backend.sendStaging((long) size * COUNT_BYTES);
        for (int p = 0; p < size; p++) {
            out.putLong(p * COUNT_BYTES, sendCounts[p]);
        }
        run(step, phase, countOffsets, countBytes, countOffsets, countBytes, "counts exchange");
        ByteBuffer in = backend.recvStaging((long) size * COUNT_BYTES);
        for (int p = 0; p < size; p++) {
            recvCounts[p] = in.getLong(p * COUNT_BYTES);
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
        long sendTotal = prepare(sendCounts, recvCounts);
        backend.sendStaging(sendTotal).put(0, send, 0, (int) sendTotal);
        long recvTotal = exchange(step, phase, sendCounts, recvCounts);
        recv.put(0, backend.recvStaging(recvTotal), 0, (int) recvTotal);
    }

    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            SegmentWriter writer,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        long sendTotal = prepare(sendCounts, recvCounts);
        ByteBuffer staging = backend.sendStaging(sendTotal);
        for (int p = 0; p < size; p++) {
            if (sendCounts[p] > 0) {
                writer.write(p, staging, (int) sendOffsets[p]);
            }
        }
        long recvTotal = exchange(step, phase, sendCounts, recvCounts);
        recv.put(0, backend.recvStaging(recvTotal), 0, (int) recvTotal);
    }

    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            SegmentReader reader,
            long[] recvCounts) {
        long sendTotal = prepare(sendCounts, recvCounts);
        backend.sendStaging(sendTotal).put(0, send, 0, (int) sendTotal);
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
    public void allToAllVDevice(
            long step,
            ExchangePhase phase,
            CudaMemory send,
            long[] sendCounts,
            CudaMemory recv,
            long[] recvCounts) {
        prepare(sendCounts, recvCounts);
        try {
            int launched =
                    backend.exchangeDevice(
                            send, sendOffsets, sendCounts, recv, recvOffsets, recvCounts);
            if (NcclResults.isError(launched)) {
                throw NcclResults.failure(
                        launched, "device all-to-all-v (ncclGroupEnd)", rank, backend.lastError());
            }
            watchdog.await(backend, timeoutNs, step, phase, rank, "device all-to-all-v");
        } catch (A2aException e) {
            throw fail(e);
        }
    }

    /** The CUDA stream the exchanges run on, for kernels that feed or consume them. */
    public CUstream_st stream() {
        return backend.stream();
    }

    @Override
    public void sendRecv(
            int to,
            ByteBuffer send,
            int sendOffset,
            int sendBytes,
            int from,
            int recvBytes,
            InboundSink sink) {
        throw new UnsupportedOperationException("sendRecv: not yet on NCCL");
    }

    @Override
    public void barrier() {
        allToAllCounts(-1, ExchangePhase.BARRIER, barrierCounts, barrierReceived);
    }

    @Override
    public void abort(Throwable cause) {
        if (failure == null) {
            failure =
                    cause instanceof A2aException a
                            ? a
                            : new A2aException("aborted: " + cause, cause);
            backend.abort();
        }
    }

    @Override
    public void close() {
        backend.close();
    }

    /** Checks the counts and lays out both sides' segments; returns the bytes to send. */
    private long prepare(long[] sendCounts, long[] recvCounts) {
        Segments.checkLength("sendCounts", sendCounts, size);
        Segments.checkLength("recvCounts", recvCounts, size);
        checkOpen();
        long sendTotal = prefix(sendCounts, sendOffsets, "sendCounts");
        long recvTotal = prefix(recvCounts, recvOffsets, "recvCounts");
        if (sendTotal > Integer.MAX_VALUE || recvTotal > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(
                    "exchange of "
                            + sendTotal
                            + " bytes out, "
                            + recvTotal
                            + " in (expected: at most "
                            + Integer.MAX_VALUE
                            + " each way per rank)");
        }
        return sendTotal;
    }

    /** Runs the exchange laid out by {@link #prepare}; returns the bytes received. */
    private long exchange(long step, ExchangePhase phase, long[] sendCounts, long[] recvCounts) {
        run(step, phase, sendOffsets, sendCounts, recvOffsets, recvCounts, "all-to-all-v");
        return recvOffsets[size - 1] + recvCounts[size - 1];
    }

    private void run(
            long step,
            ExchangePhase phase,
            long[] sendOff,
            long[] sendBytes,
            long[] recvOff,
            long[] recvBytes,
            String what) {
        try {
            int launched = backend.exchange(sendOff, sendBytes, recvOff, recvBytes);
            if (NcclResults.isError(launched)) {
                String detail = backend.lastError();
                backend.abort();
                throw NcclResults.failure(launched, what + " (ncclGroupEnd)", rank, detail);
            }
            watchdog.await(backend, timeoutNs, step, phase, rank, what);
        } catch (A2aException e) {
            throw fail(e);
        }
    }

    /** Aborts the group after {@code e}; returns what to throw. */
    private A2aException fail(A2aException e) {
        backend.abort();
        A2aException earlier = failure;
        if (earlier != null) {
            // aborted from another thread while this one waited: that is the cause to report
            return broken(earlier);
        }
        failure = e;
        return e;
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

    private void checkOpen() {
        A2aException f = failure;
        if (f != null) {
            throw broken(f);
        }
    }

    private A2aException broken(A2aException cause) {
        return new A2aException(
                "nccl group of rank " + rank + " is broken: " + cause.getMessage(), cause);
    }
}
