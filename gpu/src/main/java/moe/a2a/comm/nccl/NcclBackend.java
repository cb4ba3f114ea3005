package moe.a2a.comm.nccl;

import java.nio.ByteBuffer;
import moe.a2a.gpu.CudaMemory;
import org.bytedeco.cuda.cudart.CUstream_st;

/**
 * One rank's NCCL communicator, CUDA stream and staging memory, reduced to what {@link
 * NcclCommunicator} needs. {@link #exchange} only enqueues; {@link NcclWatchdog} waits for it. Used
 * by the rank's thread only.
 */
interface NcclBackend extends NcclWatchdog.Progress, AutoCloseable {
    int rank();

    int size();

    /**
     * The host buffer that {@link #exchange} sends from: pinned (page-locked) memory of at least
     * {@code bytes}, reused and grown as needed, little-endian, from index 0. Valid until the next
     * call that grows it.
     */
    ByteBuffer sendStaging(long bytes);

    /** The host buffer that {@link #exchange} receives into; as {@link #sendStaging}. */
    ByteBuffer recvStaging(long bytes);

    /**
     * Enqueues on the rank's stream: the send staging copied to the device, one NCCL group with a
     * send of {@code sendBytes[p]} bytes (from {@code sendOffsets[p]}) to every peer {@code p} and
     * a receive of {@code recvBytes[p]} bytes (into {@code recvOffsets[p]}) from every peer, and
     * the received bytes copied back to the receive staging. Peers must pass matching counts.
     * Returns the NCCL result of the launch ({@code ncclSuccess}, or {@code ncclInProgress} on a
     * non-blocking communicator); errors are the caller's to check.
     */
    int exchange(long[] sendOffsets, long[] sendBytes, long[] recvOffsets, long[] recvBytes);

    /**
     * Enqueues, as {@link #exchange} does: one NCCL group with a send of the first {@code
     * sendBytes} bytes of the send staging to rank {@code to} and a receive of {@code recvBytes}
     * bytes from rank {@code from} into the receive staging at 0. Either peer may be {@link
     * moe.a2a.comm.Communicator#NONE}; an empty message is not sent (NCCL skips it), but a
     * simulated backend may still match it.
     */
    int sendRecv(int to, long sendBytes, int from, long recvBytes);

    /**
     * Enqueues {@code ncclAllReduce} of {@code count} elements of {@code datatype} ({@code
     * ncclDataType_t}) with {@code op} ({@code ncclRedOp_t}): from the send staging into the
     * receive staging, both from index 0. {@code count > 0}; returns the launch's result.
     */
    int allReduce(long count, int datatype, int op);

    /**
     * Enqueues {@code ncclAllGather}: the first {@code bytesPerRank} bytes of every rank's send
     * staging land in the receive staging at {@code rank * bytesPerRank}. {@code bytesPerRank > 0}.
     */
    int allGather(long bytesPerRank);

    /**
     * Enqueues {@code ncclReduceScatter}: the send staging holds {@code size() * countPerRank}
     * elements; rank {@code r}'s receive staging gets block {@code r} reduced over every rank.
     * {@code countPerRank > 0}.
     */
    int reduceScatter(long countPerRank, int datatype, int op);

    /**
     * Enqueues {@code ncclBroadcast} of {@code bytes} bytes: {@code root}'s send staging lands in
     * every other rank's receive staging (the root's receive staging is left alone). {@code bytes >
     * 0}.
     */
    int broadcast(long bytes, int root);

    /**
     * Enqueues one NCCL group between device buffers, as {@link #exchange} without the host copies.
     * Only backends on a GPU have device memory.
     */
    int exchangeDevice(
            CudaMemory send,
            long[] sendOffsets,
            long[] sendBytes,
            CudaMemory recv,
            long[] recvOffsets,
            long[] recvBytes);

    /** The rank's CUDA stream, for kernels that must run in order with the exchanges. */
    CUstream_st stream();

    /**
     * Whether {@link #shrink} can run: the loaded NCCL has {@code ncclCommShrink} and this
     * communicator was never aborted nor closed.
     */
    boolean canShrink();

    /**
     * {@code ncclCommShrink}: this rank's communicator of the ranks left once {@code excludedRanks}
     * (ascending, without this rank) leave this one; the survivors keep their order, numbered from
     * 0, and each calls it with the same list. Waits through {@code watchdog} at most {@code
     * timeoutNs} for the others. This communicator is unchanged and still the caller's to close.
     */
    NcclBackend shrink(int[] excludedRanks, long timeoutNs, NcclWatchdog watchdog);

    /**
     * Frees the staging memory of a communicator kept only to be shrunk; the communicator and its
     * stream stay until {@link #close}.
     */
    void retire();

    /** Destroys the communicator (after an abort, only frees memory). */
    @Override
    void close();
}
