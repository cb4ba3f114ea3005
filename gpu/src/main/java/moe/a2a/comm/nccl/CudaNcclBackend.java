package moe.a2a.comm.nccl;

import static org.bytedeco.cuda.global.cudart.cudaErrorNotReady;
import static org.bytedeco.cuda.global.cudart.cudaSetDevice;
import static org.bytedeco.cuda.global.cudart.cudaStreamCreateWithFlags;
import static org.bytedeco.cuda.global.cudart.cudaStreamDestroy;
import static org.bytedeco.cuda.global.cudart.cudaStreamNonBlocking;
import static org.bytedeco.cuda.global.cudart.cudaStreamQuery;
import static org.bytedeco.cuda.global.cudart.cudaStreamSynchronize;
import static org.bytedeco.cuda.global.nccl.NCCL_SHRINK_DEFAULT;
import static org.bytedeco.cuda.global.nccl.ncclAllGather;
import static org.bytedeco.cuda.global.nccl.ncclAllReduce;
import static org.bytedeco.cuda.global.nccl.ncclBfloat16;
import static org.bytedeco.cuda.global.nccl.ncclBroadcast;
import static org.bytedeco.cuda.global.nccl.ncclCommAbort;
import static org.bytedeco.cuda.global.nccl.ncclCommDestroy;
import static org.bytedeco.cuda.global.nccl.ncclCommFinalize;
import static org.bytedeco.cuda.global.nccl.ncclCommGetAsyncError;
import static org.bytedeco.cuda.global.nccl.ncclCommInitRankConfig;
import static org.bytedeco.cuda.global.nccl.ncclCommShrink;
import static org.bytedeco.cuda.global.nccl.ncclFloat16;
import static org.bytedeco.cuda.global.nccl.ncclFloat32;
import static org.bytedeco.cuda.global.nccl.ncclGetLastError;
import static org.bytedeco.cuda.global.nccl.ncclGetUniqueId;
import static org.bytedeco.cuda.global.nccl.ncclGetVersion;
import static org.bytedeco.cuda.global.nccl.ncclInProgress;
import static org.bytedeco.cuda.global.nccl.ncclReduceScatter;
import static org.bytedeco.cuda.global.nccl.ncclSuccess;
import static org.bytedeco.cuda.global.nccl.ncclSystemError;
import static org.bytedeco.cuda.global.nccl.ncclUint8;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.GroupShrink;
import moe.a2a.gpu.CudaCheck;
import moe.a2a.gpu.CudaMemory;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.nccl.ncclComm;
import org.bytedeco.cuda.nccl.ncclUniqueId;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;

/**
 * {@link NcclBackend} on a real GPU: one NCCL communicator, one non-blocking CUDA stream, pinned
 * host staging and device buffers that grow to the largest exchange and are reused. Every call from
 * host memory is the same three steps on the stream: staging copied to the device, the NCCL call (a
 * group of {@code ncclSend}/{@code ncclRecv}, or {@code ncclAllReduce}, {@code ncclAllGather},
 * {@code ncclReduceScatter}, {@code ncclBroadcast}), the result copied back.
 *
 * <p>Only CUDA 13.0 runtime calls and NCCL calls present since 2.14 are made ({@link
 * moe.a2a.gpu.GpuProbe#MIN_NCCL_VERSION}); the non-blocking {@code ncclCommInitRankConfig} and
 * {@code ncclCommShrink} are used when the loaded NCCL is at least 2.27, shrink's first: {@code
 * ncclConfig_t} only grows at its end, and NCCL reads no more of it than its own layout holds, so
 * the presets' (2.29.3) config is read right by any of them. An older NCCL makes the parent
 * blocking, and its shrink could not be bounded. Native calls are serialized on {@code this}, so
 * {@link #abort} may come from another thread without racing a poll on a freed communicator.
 */
final class CudaNcclBackend implements NcclBackend {
    private static final int LAST_ERROR_SINCE = 21300;

    /** NCCL 2.27: {@code ncclCommShrink}, and the non-blocking config used with it. */
    static final int NON_BLOCKING_SINCE = 22700;

    private final int rank;
    private final int size;
    private final int device;
    private final int version;
    private final ncclComm comm;
    private final CUstream_st stream;
    private final NcclStaging staging;
    private boolean aborted;
    private boolean closed;

    private CudaNcclBackend(
            int rank, int size, int device, int version, ncclComm comm, CUstream_st stream) {
        this.rank = rank;
        this.size = size;
        this.device = device;
        this.version = version;
        this.comm = comm;
        this.stream = stream;
        this.staging = new NcclStaging(device, stream);
    }

    /**
     * Creates this rank's communicator, waiting at most {@code timeoutNs} for the others to join.
     */
    static CudaNcclBackend create(
            NcclUniqueId id,
            int rank,
            int size,
            int device,
            long timeoutNs,
            NcclWatchdog watchdog) {
        CudaCheck.check(cudaSetDevice(device), "cudaSetDevice(" + device + ")");
        int[] v = new int[1];
        check(ncclGetVersion(v), "ncclGetVersion", rank);
        CUstream_st stream = newStream();
        ncclUniqueId uid = new ncclUniqueId();
        uid.internal().put(id.toByteArray());
        ncclComm comm = new ncclComm();
        boolean nonBlocking = v[0] >= NON_BLOCKING_SINCE;
        CudaNcclBackend backend;
        try {
            if (nonBlocking) {
                check(
                        ncclCommInitRankConfig(comm, size, uid, rank, NcclInit.nonBlockingConfig()),
                        "ncclCommInitRankConfig",
                        rank);
            } else {
                NcclInit.blocking(comm, size, uid, rank, device, timeoutNs);
            }
            backend = new CudaNcclBackend(rank, size, device, v[0], comm, stream);
        } catch (RuntimeException e) {
            // no backend owns the stream yet (a timed-out group epoch, say, and the next tries)
            cudaStreamDestroy(stream);
            throw e;
        }
        return nonBlocking
                ? awaitInit(backend, timeoutNs, watchdog, "ncclCommInitRankConfig")
                : backend;
    }

    @Override
    public synchronized boolean canShrink() {
        // a parent NCCL has flagged (a peer's connection broken, say) would fail the shrink here
        // while the others wait their timeout
        return version >= NON_BLOCKING_SINCE && !aborted && !closed && asyncError() == ncclSuccess;
    }

    /**
     * {@inheritDoc}
     *
     * <p>A non-blocking shrink runs on NCCL's own thread: meanwhile the parent reports {@code
     * ncclInProgress}, and NCCL writes the new communicator's handle into the slot it was given
     * only once it is complete. So the slot is native memory of its own, held until NCCL's thread
     * is done with it (a JavaCPP {@code ncclComm} out-parameter is a temporary of the call's native
     * frame), and the parent is the one polled.
     */
    @Override
    public NcclBackend shrink(int[] excludedRanks, long timeoutNs, NcclWatchdog watchdog) {
        long deadline = System.nanoTime() + timeoutNs;
        PointerPointer<ncclComm> slot;
        synchronized (this) {
            if (!canShrink()) {
                throw new IllegalStateException(
                        "ncclCommShrink: rank "
                                + rank
                                + "'s communicator cannot shrink (aborted="
                                + aborted
                                + ", closed="
                                + closed
                                + ", nccl="
                                + version
                                + ", expected: at least "
                                + NON_BLOCKING_SINCE
                                + ")");
            }
            CudaCheck.check(cudaSetDevice(device), "cudaSetDevice(" + device + ")");
            slot = new PointerPointer<ncclComm>(1).put(0, (Pointer) null);
            int started =
                    ncclCommShrink(
                            comm,
                            excludedRanks.clone(),
                            excludedRanks.length,
                            slot,
                            NcclInit.nonBlockingConfig(),
                            NCCL_SHRINK_DEFAULT);
            if (NcclResults.isError(started)) {
                slot.close();
                throw NcclResults.failure(started, "ncclCommShrink", rank, "");
            }
        }
        ncclComm child;
        try {
            watchdog.awaitLaunched(
                    initProgress(), timeoutNs, -1, ExchangePhase.BARRIER, rank, "ncclCommShrink");
        } catch (RuntimeException e) {
            // the parent's abort ends the shrink and joins NCCL's thread: what it left is freed
            abort();
            child = slot.get(ncclComm.class, 0);
            if (child != null && !child.isNull()) {
                ncclCommAbort(child);
            }
            slot.close();
            throw e;
        }
        child = slot.get(ncclComm.class, 0);
        slot.close();
        if (child == null || child.isNull()) {
            throw NcclResults.failure(
                    ncclSystemError,
                    "ncclCommShrink",
                    rank,
                    "NCCL reported the shrink done but gave no communicator");
        }
        CudaNcclBackend shrunk;
        try {
            shrunk =
                    new CudaNcclBackend(
                            GroupShrink.survivorRank(rank, excludedRanks),
                            size - excludedRanks.length,
                            device,
                            version,
                            child,
                            newStream());
        } catch (RuntimeException e) {
            ncclCommAbort(child);
            throw e;
        }
        return awaitInit(
                shrunk, Math.max(1, deadline - System.nanoTime()), watchdog, "ncclCommShrink");
    }

    private static CUstream_st newStream() {
        CUstream_st stream = new CUstream_st();
        CudaCheck.check(
                cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking),
                "cudaStreamCreateWithFlags");
        return stream;
    }

    /**
     * Waits out a non-blocking init or shrink: it runs in the background until the async error
     * leaves ncclInProgress. A failure aborts the new communicator, which is then freed.
     */
    private static CudaNcclBackend awaitInit(
            CudaNcclBackend backend, long timeoutNs, NcclWatchdog watchdog, String call) {
        try {
            watchdog.await(
                    backend.initProgress(),
                    timeoutNs,
                    -1,
                    ExchangePhase.BARRIER,
                    backend.rank,
                    call);
            return backend;
        } catch (RuntimeException e) {
            backend.close();
            throw e;
        }
    }

    static NcclUniqueId newUniqueId() {
        ncclUniqueId uid = new ncclUniqueId();
        check(ncclGetUniqueId(uid), "ncclGetUniqueId", 0);
        byte[] bytes = new byte[NcclUniqueId.BYTES];
        uid.internal().get(bytes);
        return NcclUniqueId.of(bytes, "ncclGetUniqueId");
    }

    private NcclWatchdog.Progress initProgress() {
        return new NcclWatchdog.Progress() {
            @Override
            public int asyncError() {
                return CudaNcclBackend.this.asyncError();
            }

            @Override
            public boolean isIdle() {
                return CudaNcclBackend.this.asyncError() == ncclSuccess;
            }

            @Override
            public void abort() {
                CudaNcclBackend.this.abort();
            }

            @Override
            public String lastError() {
                return CudaNcclBackend.this.lastError();
            }
        };
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
    public ByteBuffer sendStaging(long bytes) {
        return staging.sendHost(bytes);
    }

    @Override
    public ByteBuffer recvStaging(long bytes) {
        return staging.recvHost(bytes);
    }

    @Override
    public synchronized int exchange(
            long[] sendOffsets, long[] sendBytes, long[] recvOffsets, long[] recvBytes) {
        long sendTotal = sendOffsets[size - 1] + sendBytes[size - 1];
        long recvTotal = recvOffsets[size - 1] + recvBytes[size - 1];
        return staged(
                sendTotal,
                recvTotal,
                () ->
                        NcclGroups.allToAllV(
                                comm,
                                stream,
                                staging.sendDevice(),
                                sendOffsets,
                                sendBytes,
                                staging.recvDevice(),
                                recvOffsets,
                                recvBytes));
    }

    @Override
    public synchronized int sendRecv(int to, long sendBytes, int from, long recvBytes) {
        long out = to == Communicator.NONE ? 0 : sendBytes;
        long in = from == Communicator.NONE ? 0 : recvBytes;
        return staged(
                out,
                in,
                () ->
                        NcclGroups.sendRecv(
                                comm,
                                stream,
                                staging.sendDevice(),
                                out,
                                to,
                                staging.recvDevice(),
                                in,
                                from));
    }

    @Override
    public synchronized int allReduce(long count, int datatype, int op) {
        long bytes = count * elementBytes(datatype);
        return staged(
                bytes,
                bytes,
                () ->
                        ncclAllReduce(
                                staging.sendAt(),
                                staging.recvAt(),
                                count,
                                datatype,
                                op,
                                comm,
                                stream));
    }

    @Override
    public synchronized int allGather(long bytesPerRank) {
        return staged(
                bytesPerRank,
                bytesPerRank * size,
                () ->
                        ncclAllGather(
                                staging.sendAt(),
                                staging.recvAt(),
                                bytesPerRank,
                                ncclUint8,
                                comm,
                                stream));
    }

    @Override
    public synchronized int reduceScatter(long countPerRank, int datatype, int op) {
        long blockBytes = countPerRank * elementBytes(datatype);
        return staged(
                blockBytes * size,
                blockBytes,
                () ->
                        ncclReduceScatter(
                                staging.sendAt(),
                                staging.recvAt(),
                                countPerRank,
                                datatype,
                                op,
                                comm,
                                stream));
    }

    @Override
    public synchronized int broadcast(long bytes, int root) {
        // in place: the root broadcasts its send buffer, the others receive into their receive
        // buffer (NCCL reads sendbuff on the root only)
        boolean isRoot = rank == root;
        return staged(
                isRoot ? bytes : 0,
                isRoot ? 0 : bytes,
                () -> {
                    BytePointer buf = isRoot ? staging.sendAt() : staging.recvAt();
                    return ncclBroadcast(buf, buf, bytes, ncclUint8, root, comm, stream);
                });
    }

    /**
     * Copies {@code sendBytes} of the send staging to the device, launches {@code call} (from the
     * device send buffer into the device receive buffer) and arranges for {@code recvBytes} to be
     * copied back into the receive staging once NCCL has enqueued its kernels (see {@link
     * #isIdle}). Returns the launch's result.
     */
    private int staged(long sendBytes, long recvBytes, IntSupplier call) {
        if (aborted) {
            return ncclSystemError;
        }
        staging.copyIn(sendBytes, recvBytes);
        int result = call.getAsInt();
        staging.copyBackLater(recvBytes);
        return result;
    }

    private static long elementBytes(int datatype) {
        return switch (datatype) {
            case ncclFloat32 -> Float.BYTES;
            case ncclBfloat16, ncclFloat16 -> Short.BYTES;
            default -> throw new IllegalArgumentException("datatype: " + datatype);
        };
    }

    @Override
    public synchronized int exchangeDevice(
            CudaMemory send,
            long[] sendOffsets,
            long[] sendBytes,
            CudaMemory recv,
            long[] recvOffsets,
            long[] recvBytes) {
        if (aborted) {
            return ncclSystemError;
        }
        CudaCheck.check(cudaSetDevice(device), "cudaSetDevice(" + device + ")");
        return NcclGroups.allToAllV(
                comm, stream, send, sendOffsets, sendBytes, recv, recvOffsets, recvBytes);
    }

    @Override
    public CUstream_st stream() {
        return stream;
    }

    @Override
    public synchronized boolean isIdle() {
        if (aborted) {
            return false;
        }
        int[] state = new int[1];
        check(ncclCommGetAsyncError(comm, state), "ncclCommGetAsyncError", rank);
        if (state[0] == ncclInProgress) {
            return false;
        }
        staging.copyBack();
        int query = cudaStreamQuery(stream);
        if (query == cudaErrorNotReady) {
            return false;
        }
        CudaCheck.check(query, "cudaStreamQuery");
        return true;
    }

    @Override
    public synchronized int asyncError() {
        if (aborted) {
            return ncclSystemError;
        }
        int[] state = new int[1];
        int result = ncclCommGetAsyncError(comm, state);
        return result != ncclSuccess ? result : state[0];
    }

    @Override
    public synchronized String lastError() {
        if (aborted || version < LAST_ERROR_SINCE) {
            return "";
        }
        BytePointer text = ncclGetLastError(comm);
        return text == null || text.isNull() ? "" : text.getString();
    }

    @Override
    public synchronized void abort() {
        if (!aborted && !closed) {
            aborted = true;
            ncclCommAbort(comm);
        }
    }

    @Override
    public synchronized void retire() {
        if (closed) {
            return;
        }
        if (!aborted) {
            cudaStreamSynchronize(stream);
        }
        staging.close();
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (!aborted) {
            cudaStreamSynchronize(stream);
            int[] state = {ncclCommFinalize(comm)};
            if (state[0] == ncclSuccess || state[0] == ncclInProgress) {
                state[0] = ncclInProgress;
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (state[0] == ncclInProgress
                        && System.nanoTime() < deadline
                        && ncclCommGetAsyncError(comm, state) == ncclSuccess) {
                    Thread.onSpinWait();
                }
            }
            // ncclCommDestroy of a communicator that is not ready returns early, leaving this
            // thread inside an NCCL group (every later group call here would launch nothing):
            // one that finalize did not bring to ncclSuccess is aborted instead
            if (state[0] == ncclSuccess) {
                ncclCommDestroy(comm);
            } else {
                ncclCommAbort(comm);
            }
        }
        staging.close();
        cudaStreamDestroy(stream);
    }

    private static void check(int result, String call, int rank) {
        if (NcclResults.isError(result)) {
            throw NcclResults.failure(result, call, rank, "");
        }
    }
}
