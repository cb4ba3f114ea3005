package moe.a2a.comm.nccl;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Objects;
import java.util.function.IntSupplier;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.CollectiveAlgo;
import moe.a2a.comm.CollectiveArgs;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ExchangeTimeoutException;
import moe.a2a.comm.InboundSink;
import moe.a2a.comm.SegmentReader;
import moe.a2a.comm.SegmentWriter;
import moe.a2a.comm.Segments;
import moe.a2a.comm.Transport;
import moe.a2a.gpu.CudaMemory;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;
import org.bytedeco.cuda.cudart.CUstream_st;

/**
 * The {@link Communicator} collectives over NCCL. NCCL has no all-to-all-v, and mismatched counts
 * hang it, so every exchange is one NCCL group of {@code ncclSend}/{@code ncclRecv} per peer with
 * counts both sides learned first from {@link #allToAllCounts} (itself a group of 8-byte
 * exchanges). Host buffers are staged through pinned memory and device buffers on the rank's own
 * stream; every wait goes through {@link NcclWatchdog}, so a dead peer or an NCCL error aborts the
 * communicator and surfaces as an exception instead of a hang.
 *
 * <p>The other collectives are NCCL's own calls ({@code ncclAllReduce}, {@code ncclAllGather},
 * {@code ncclReduceScatter}, {@code ncclBroadcast}) and point-to-point is one group of {@code
 * ncclSend}/{@code ncclRecv}, each staged and watched the same way. NCCL chooses its algorithms
 * itself: the {@link CollectiveAlgo} arguments are ignored here ({@code NCCL_ALGO} applies).
 *
 * <p>NCCL cannot carry a reason to the peers: when one rank aborts, the others fail at their
 * deadline (in a cluster the control plane's AbortGroup reaches them sooner).
 *
 * <p>Owned by the rank's thread, like every communicator.
 */
public final class NcclCommunicator implements Communicator {
    private static final int COUNT_BYTES = Long.BYTES;
    private static final int UNKNOWN_PEER = ExchangeTimeoutException.UNKNOWN_PEER;

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
    private final long[] equalCounts;
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
        this.equalCounts = new long[size];
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

    /**
     * One NCCL group of an {@code ncclSend} to {@code to} and an {@code ncclRecv} from {@code
     * from}, staged through pinned and device memory; {@code sink} reads the received bytes from
     * the host staging. Messages of a pair match in order, as NCCL matches them. NCCL cannot check
     * lengths: a message of another length than its receiver expects is undefined in NCCL
     * (typically a hang, which the watchdog turns into a timeout); only the simulated group in the
     * tests reports the two lengths at once.
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
        int out = 0;
        int in = 0;
        if (to != NONE) {
            CollectiveArgs.checkRank("to", to, size);
            CollectiveArgs.checkNonNegative("sendOffset", sendOffset);
            CollectiveArgs.checkNonNegative("sendBytes", sendBytes);
            CollectiveArgs.checkCapacity("send", send, (long) sendOffset + sendBytes);
            out = sendBytes;
        }
        if (from != NONE) {
            CollectiveArgs.checkRank("from", from, size);
            CollectiveArgs.checkNonNegative("recvBytes", recvBytes);
            Objects.requireNonNull(sink, "sink");
            in = recvBytes;
        }
        checkOpen();
        if (to == NONE && from == NONE) {
            return;
        }
        if (out > 0) {
            backend.sendStaging(out).put(0, send, sendOffset, out);
        }
        final long sent = out;
        final long expected = in;
        String what =
                "point-to-point"
                        + (to == NONE ? "" : " to rank " + to)
                        + (from == NONE ? "" : " from rank " + from);
        int peer = to == NONE || to == from ? from : from == NONE ? to : UNKNOWN_PEER;
        launch(() -> backend.sendRecv(to, sent, from, expected), what + " (ncclGroupEnd)", peer);
        if (from != NONE) {
            sink.accept(backend.recvStaging(in), 0, in);
        }
    }

    /**
     * {@code ncclAllReduce}, through pinned and device staging. {@code algo} is ignored: NCCL picks
     * its own algorithm (ring, tree, NVLS, ...) by size and topology, and the {@code NCCL_ALGO}
     * environment variable applies instead. NCCL reduces bf16 and fp16 its own way: in the order
     * its algorithm takes, with the device's arithmetic for each step, so sums of values not exact
     * in the type may differ in the last bits from the CPU transports'. NaN and signed zeros in max
     * and min follow the device's arithmetic, not {@link Math#max}.
     */
    @Override
    public void allReduce(
            ByteBuffer send,
            ByteBuffer recv,
            int count,
            DType dtype,
            ReduceOp op,
            CollectiveAlgo algo) {
        final int bytes = CollectiveArgs.checkCount("count", count, dtype);
        CollectiveArgs.checkCapacity("send", send, bytes);
        CollectiveArgs.checkCapacity("recv", recv, bytes);
        checkOpen();
        if (bytes == 0) {
            return;
        }
        backend.sendStaging(bytes).put(0, send, 0, bytes);
        launch(
                () -> backend.allReduce(count, NcclTypes.dataType(dtype), NcclTypes.redOp(op)),
                "ncclAllReduce",
                UNKNOWN_PEER);
        recv.put(0, backend.recvStaging(bytes), 0, bytes);
    }

    /** {@code ncclAllGather}, through pinned and device staging. */
    @Override
    public void allGather(ByteBuffer send, ByteBuffer recv, int bytesPerRank) {
        CollectiveArgs.checkNonNegative("bytesPerRank", bytesPerRank);
        final long total = (long) size * bytesPerRank;
        CollectiveArgs.checkCapacity("send", send, bytesPerRank);
        CollectiveArgs.checkCapacity("recv", recv, total);
        checkOpen();
        if (bytesPerRank == 0) {
            return;
        }
        backend.sendStaging(bytesPerRank).put(0, send, 0, bytesPerRank);
        launch(() -> backend.allGather(bytesPerRank), "ncclAllGather", UNKNOWN_PEER);
        recv.put(0, backend.recvStaging(total), 0, (int) total);
    }

    /**
     * {@code ncclReduceScatter}, through pinned and device staging; reduced as {@link #allReduce}
     * says.
     */
    @Override
    public void reduceScatter(
            ByteBuffer send, ByteBuffer recv, int countPerRank, DType dtype, ReduceOp op) {
        final int blockBytes = CollectiveArgs.checkCount("countPerRank", countPerRank, dtype);
        final long total = (long) size * blockBytes;
        CollectiveArgs.checkCapacity("send", send, total);
        CollectiveArgs.checkCapacity("recv", recv, blockBytes);
        checkOpen();
        if (blockBytes == 0) {
            return;
        }
        backend.sendStaging(total).put(0, send, 0, (int) total);
        launch(
                () ->
                        backend.reduceScatter(
                                countPerRank, NcclTypes.dataType(dtype), NcclTypes.redOp(op)),
                "ncclReduceScatter",
                UNKNOWN_PEER);
        recv.put(0, backend.recvStaging(blockBytes), 0, blockBytes);
    }

    /**
     * {@code ncclBroadcast} from any root, through pinned and device staging; the root's buffer is
     * left as it is. {@code algo} is ignored, as for {@link #allReduce}.
     */
    @Override
    public void broadcast(ByteBuffer buf, int bytes, int root, CollectiveAlgo algo) {
        CollectiveArgs.checkNonNegative("bytes", bytes);
        CollectiveArgs.checkRank("root", root, size);
        CollectiveArgs.checkCapacity("buf", buf, bytes);
        checkOpen();
        if (bytes == 0) {
            return;
        }
        if (rank == root) {
            backend.sendStaging(bytes).put(0, buf, 0, bytes);
        }
        launch(() -> backend.broadcast(bytes, root), "ncclBroadcast", UNKNOWN_PEER);
        if (rank != root) {
            buf.put(0, backend.recvStaging(bytes), 0, bytes);
        }
    }

    /**
     * Equal-split all-to-all as one NCCL group of {@code ncclSend}/{@code ncclRecv} per peer (the
     * all-to-all-v path with every count {@code bytesPerPeer}, no counts exchange needed): {@code
     * ncclAlltoAll} exists only from NCCL 2.28, and this transport runs on NCCL 2.14 and later.
     */
    @Override
    public void allToAll(ByteBuffer send, ByteBuffer recv, int bytesPerPeer) {
        CollectiveArgs.checkNonNegative("bytesPerPeer", bytesPerPeer);
        final long total = (long) size * bytesPerPeer;
        CollectiveArgs.checkCapacity("send", send, total);
        CollectiveArgs.checkCapacity("recv", recv, total);
        checkOpen();
        if (bytesPerPeer == 0) {
            return;
        }
        Arrays.fill(equalCounts, bytesPerPeer);
        allToAllV(-1, ExchangePhase.COLLECTIVE, send, equalCounts, recv, equalCounts);
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

    /**
     * Launches one NCCL call from the host staging ({@code launch} returns its result) and waits
     * for it; {@code peer} is the only peer it waits on, or {@link
     * ExchangeTimeoutException#UNKNOWN_PEER}.
     */
    private void launch(IntSupplier launch, String call, int peer) {
        try {
            int launched = launch.getAsInt();
            if (NcclResults.isError(launched)) {
                String detail = backend.lastError();
                backend.abort();
                throw NcclResults.failure(launched, call, rank, detail);
            }
            watchdog.await(backend, timeoutNs, -1, ExchangePhase.COLLECTIVE, rank, call, peer);
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
