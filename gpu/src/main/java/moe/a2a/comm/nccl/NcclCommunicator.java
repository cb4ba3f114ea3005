package moe.a2a.comm.nccl;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Objects;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.CollectiveAlgo;
import moe.a2a.comm.CollectiveArgs;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ExchangeTimeoutException;
import moe.a2a.comm.InboundSink;
import moe.a2a.comm.SegmentReader;
import moe.a2a.comm.SegmentWriter;
import moe.a2a.comm.Transport;
import moe.a2a.gpu.CudaMemory;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 * deadline. In a cluster the control plane's AbortGroup comes sooner: a worker aborts its group
 * from the thread that receives it, and the rank's own thread aborts NCCL at its next poll.
 *
 * <p>{@link NcclExchange} runs the counts exchange and all-to-all-v, {@link NcclLauncher} launches
 * every call, waits for it and holds the group's failure; this class checks the other collectives'
 * arguments and stages their buffers.
 *
 * <p>Owned by the rank's thread, like every communicator.
 */
public final class NcclCommunicator implements Communicator {
    private static final Logger LOG = LoggerFactory.getLogger(NcclCommunicator.class);

    private static final int UNKNOWN_PEER = ExchangeTimeoutException.UNKNOWN_PEER;

    private final NcclBackend backend;
    private final NcclWatchdog watchdog;
    private final NcclLauncher launcher;
    private final NcclExchange exchange;
    private final int rank;
    private final int size;
    private final long[] barrierCounts;
    private final long[] barrierReceived;
    private final long[] equalCounts;

    /** Set by the data plane that formed it: {@link #close} then leaves it to that plane. */
    private boolean keptByPlane;

    NcclCommunicator(NcclBackend backend, NcclWatchdog watchdog, long timeoutNs) {
        this.backend = backend;
        this.watchdog = watchdog;
        this.launcher = new NcclLauncher(backend, watchdog, timeoutNs);
        this.exchange = new NcclExchange(backend, launcher);
        this.rank = backend.rank();
        this.size = backend.size();
        this.barrierCounts = new long[size];
        this.barrierReceived = new long[size];
        this.equalCounts = new long[size];
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
        return NcclTransportProvider.NCCL;
    }

    @Override
    public void allToAllCounts(
            long step, ExchangePhase phase, long[] sendCounts, long[] recvCounts) {
        exchange.counts(step, phase, sendCounts, recvCounts);
    }

    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        exchange.allToAllV(step, phase, send, sendCounts, recv, recvCounts);
    }

    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            SegmentWriter writer,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        exchange.allToAllV(step, phase, writer, sendCounts, recv, recvCounts);
    }

    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            SegmentReader reader,
            long[] recvCounts) {
        exchange.allToAllV(step, phase, send, sendCounts, reader, recvCounts);
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
        exchange.allToAllVDevice(step, phase, send, sendCounts, recv, recvCounts);
    }

    /**
     * Enqueues a fixed-size all-to-all between device buffers ({@code bytesPerPeer} to and from
     * every rank, at {@code p * bytesPerPeer} on both sides) and returns once it is on the stream,
     * without waiting for it: graph-safe, for a step captured as a CUDA graph. Every rank enqueues
     * its matching call, captured or not alike.
     */
    public void enqueueAllToAllDevice(
            long step, ExchangePhase phase, CudaMemory send, CudaMemory recv, long bytesPerPeer) {
        exchange.enqueueAllToAllDevice(step, phase, send, recv, bytesPerPeer);
    }

    /**
     * As {@link #enqueueAllToAllDevice(long, ExchangePhase, CudaMemory, CudaMemory, long)}, with
     * peer {@code p}'s segment at {@code peerOffsets[p]} in both buffers: a sparse group's members
     * exchanging the segments of a buffer laid out for every world rank.
     */
    public void enqueueAllToAllDevice(
            long step,
            ExchangePhase phase,
            CudaMemory send,
            CudaMemory recv,
            long bytesPerPeer,
            long[] peerOffsets) {
        exchange.enqueueAllToAllDevice(step, phase, send, recv, bytesPerPeer, peerOffsets);
    }

    /**
     * Waits, to the group's timeout, for everything enqueued on this rank's stream (exchanges,
     * kernels, a launched graph) to finish; a timeout or an NCCL error aborts the group and throws,
     * as a blocking exchange would.
     */
    public void awaitEnqueued(long step, ExchangePhase phase, String what) {
        try {
            launcher.await(step, phase, what);
        } catch (A2aException e) {
            throw launcher.fail(e);
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
        launcher.checkOpen();
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
        launcher.launch(
                () -> backend.sendRecv(to, sent, from, expected), what + " (ncclGroupEnd)", peer);
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
        launcher.checkOpen();
        if (bytes == 0) {
            return;
        }
        backend.sendStaging(bytes).put(0, send, 0, bytes);
        launcher.launch(
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
        launcher.checkOpen();
        if (bytesPerRank == 0) {
            return;
        }
        backend.sendStaging(bytesPerRank).put(0, send, 0, bytesPerRank);
        launcher.launch(() -> backend.allGather(bytesPerRank), "ncclAllGather", UNKNOWN_PEER);
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
        launcher.checkOpen();
        if (blockBytes == 0) {
            return;
        }
        backend.sendStaging(total).put(0, send, 0, (int) total);
        launcher.launch(
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
        launcher.checkOpen();
        if (bytes == 0) {
            return;
        }
        if (rank == root) {
            backend.sendStaging(bytes).put(0, buf, 0, bytes);
        }
        launcher.launch(() -> backend.broadcast(bytes, root), "ncclBroadcast", UNKNOWN_PEER);
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
        launcher.checkOpen();
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
        launcher.abort(cause);
    }

    /** Whether the group failed or was aborted: every later call fails. */
    public boolean failed() {
        return launcher.failed();
    }

    /**
     * Whether {@link #shrink} can run: the loaded NCCL has {@code ncclCommShrink} and this
     * communicator was never aborted by NCCL (an abort while idle leaves it intact).
     */
    public boolean canShrink() {
        return backend.canShrink();
    }

    /**
     * {@code ncclCommShrink}: this rank's communicator of the ranks left once {@code excludedRanks}
     * (ascending, without this rank) leave this one, in the same order, numbered from 0. Every
     * survivor calls it with the same list; waits at most {@code timeoutNs} for them, the timeout
     * of the communicator made. This one is unchanged and still to be freed.
     */
    public NcclCommunicator shrink(int[] excludedRanks, long timeoutNs) {
        // a shrink that fails aborts this parent, and NCCL's abort waits for every graph holding
        // it: they go first, on their owner's thread, as before any other abort
        if (!launcher.graphs().clear()) {
            throw new IllegalStateException(
                    "ncclCommShrink: rank "
                            + backend.rank()
                            + "'s communicator is held by CUDA graphs of another thread or an open"
                            + " capture");
        }
        return new NcclCommunicator(
                backend.shrink(excludedRanks, timeoutNs, watchdog), watchdog, timeoutNs);
    }

    /**
     * Makes {@link #close} leave this communicator to its data plane, which {@link #release}s it.
     */
    void keepForPlane() {
        keptByPlane = true;
    }

    /** Frees a communicator its data plane kept, as {@link #close} frees any other. */
    void release() {
        free();
    }

    /**
     * Frees the communicator; one its data plane keeps ({@link #keepForPlane}) only loses its
     * staging memory, until the plane releases it.
     */
    @Override
    public void close() {
        if (keptByPlane) {
            // retiring waits for the stream: work a failed group left in flight is aborted first
            launcher.abortIfBusy();
            backend.retire();
        } else {
            free();
        }
    }

    /**
     * Registers {@code drop}, which destroys the CUDA graphs the calling thread captures with this
     * communicator's calls: NCCL 2.26+ makes {@code ncclCommAbort} and {@code ncclCommDestroy} wait
     * until no such graph is left, so it runs before either, on this thread. An abort from another
     * thread marks the group failed, and the owner's wait, if one is under way, aborts it at its
     * next poll.
     */
    public void holdGraphs(Runnable drop) {
        launcher.graphs().hold(drop);
    }

    /** Forgets {@code drop} ({@link #holdGraphs}): its graphs are gone for good. */
    public void releaseGraphs(Runnable drop) {
        launcher.graphs().release(drop);
    }

    /**
     * A capture of this communicator's calls into a CUDA graph opens ({@code open}) or ends: while
     * one is open, an abort waits for it to end.
     */
    public void capturing(boolean open) {
        launcher.graphs().capturing(open);
    }

    /**
     * One aborted while idle (its group dropped) is aborted in NCCL now: {@code ncclCommAbort}
     * waits for no peer, and some may be gone; any other is finalized and destroyed. The graphs
     * holding it go first; one held by another thread's graphs is left as it is.
     */
    private void free() {
        if (!launcher.graphs().clear()) {
            // NCCL would wait for those graphs forever, and only their owner may destroy them
            LOG.warn(
                    "rank {}'s NCCL communicator is left to the process's exit: CUDA graphs of"
                            + " another thread hold it",
                    backend.rank());
            return;
        }
        if (launcher.failed()) {
            backend.abort();
        }
        backend.close();
    }
}
