package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cudart.cudaMemcpyAsync;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyDeviceToHost;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyHostToDevice;
import static org.bytedeco.cuda.global.cudart.cudaMemsetAsync;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.function.Consumer;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.DispatchLayout;
import moe.a2a.dispatch.Dispatcher;
import moe.a2a.dispatch.Placement;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.Fp8RowLayout;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.jspecify.annotations.Nullable;

/**
 * One rank's low-latency dispatch and combine on the device, over NCCL, with every size fixed by
 * the bound {@code T} ({@code --ll-max-tokens}): what a step captured as a CUDA graph needs. The
 * host only stages ({@link #stage}: tokens, region headers and index lists into pinned memory);
 * everything else is enqueued on the stream without a host round trip: the pack into one region per
 * destination ({@link LowLatencyPlan}), one fixed-size NCCL group of the group's members ({@link
 * DeviceGroup}: every rank, or those a sparse group keeps), the grouping by local expert read from
 * the arrived headers ({@code ll_group}), and for combine the weighted sums, a second fixed-size
 * group and the sum at the source, with the output and the counts copied back to pinned memory.
 * Each local expert slot has room for every row that can arrive ({@code N * T}), so the experts run
 * fixed shapes too.
 *
 * <p>The sums are the CPU path's, in its order, without fused multiply-adds (bit-identical for
 * finite inputs; a NaN comes out as the device's canonical one). Owned by the rank's thread; {@link
 * #stage} only while the stream is idle.
 */
public final class GpuLowLatencyDispatcher implements AutoCloseable {
    private final DeviceGroup group;
    private final CudaKernels kernels;
    private final LowLatencyPlan plan;
    private final int hidden;
    private final int topK;
    private final int worldSize;
    private final int bound;

    /** The tokens' dtype, in which rows travel both ways. */
    private final DType dtype;

    /** Bytes of a token row as the tokens came, and as combine returns it. */
    private final int rowBytes;

    /** With FP8 dispatch, the pack quantizes the token rows and the grouping dequantizes them. */
    private final boolean fp8;

    /** Bytes of a row of the dispatch regions: a token row, or its FP8 row (codes and scales). */
    private final int regionRowBytes;

    private final int slots;

    /** Rows every local slot has room for, and rows of the receive side: {@code N * T}. */
    private final int rows;

    /** {@link #rows} for each local slot: the grouped layout, the same every step. */
    private final int[] perSlot;

    private final CudaMemory staged = CudaMemory.pinnedHost();
    private final CudaMemory stagedDevice = CudaMemory.device();

    /** With FP8 dispatch, the tokens apart from the headers: their rows are not region rows. */
    private final CudaMemory stagedTokens = CudaMemory.pinnedHost();

    private final CudaMemory stagedTokensDevice = CudaMemory.device();
    private final CudaMemory send = CudaMemory.device();
    private final CudaMemory recv = CudaMemory.device();
    private final CudaMemory lists = CudaMemory.device();
    private final CudaMemory grouped = CudaMemory.device();
    private final CudaMemory combineSend = CudaMemory.device();
    private final CudaMemory combineRecv = CudaMemory.device();
    private final CudaMemory out = CudaMemory.device();
    private final CudaMemory hostOut = CudaMemory.pinnedHost();
    private final IndexUpload indexes = new IndexUpload();
    private final long groupIndexAt;
    private final long startAt;
    private final long entryRowAt;
    private final long entryWeightAt;
    private final long receivedAt;
    private long packAt;
    private long returnedStartAt;
    private long returnedAt;
    private int numTokens;

    /**
     * For tokens in {@code dtype}, dispatched as {@code dispatchDType}: rows travel as the tokens
     * came, or as FP8 rows (quantized by the pack as the CPU path quantizes), and return in {@code
     * dtype}; the experts get bf16 rows for bf16 tokens, fp32 rows otherwise ({@link
     * GpuDispatcher#expertDType}). Regions are laid out for every world rank; in a sparse group
     * those of the ranks left out stay as zeroed here, a count of 0, so nothing arrives from them.
     * Region rows of any size: where they leave a header off 4-byte alignment ({@code hidden} odd
     * in a 2-byte dtype, or not a multiple of 4 with FP8 dispatch), {@code ll_group} reads its
     * fields a byte at a time.
     */
    GpuLowLatencyDispatcher(
            DeviceGroup group,
            Placement placement,
            int hidden,
            int topK,
            int bound,
            DType dtype,
            DispatchDType dispatchDType,
            CudaKernels kernels) {
        this.fp8 = dispatchDType == DispatchDType.FP8;
        this.regionRowBytes = regionRowBytes(hidden, dtype, dispatchDType);
        this.dtype = dtype;
        this.group = group;
        this.kernels = kernels;
        this.hidden = hidden;
        this.topK = topK;
        this.worldSize = group.size();
        this.bound = bound;
        this.rowBytes = hidden * dtype.sizeBytes();
        this.slots = placement.localExperts(group.rank());
        this.rows = worldSize * bound;
        this.perSlot = new int[slots];
        Arrays.fill(perSlot, rows);
        this.plan = new LowLatencyPlan(placement, group.rank(), topK, bound, regionRowBytes);
        groupIndexAt = 0;
        startAt = align(groupIndexAt + (long) Integer.BYTES * Math.max(1, slots * rows));
        entryRowAt = align(startAt + (long) Integer.BYTES * (rows + 1));
        entryWeightAt = align(entryRowAt + (long) Integer.BYTES * rows * topK);
        receivedAt = align(entryWeightAt + (long) Float.BYTES * rows * topK);
        try {
            allocate((long) plan.regionRows() * regionRowBytes);
        } catch (RuntimeException e) {
            // out of memory partway: what was taken goes back
            close();
            throw e;
        }
    }

    /** Every buffer at its fixed size, the receive regions zeroed. */
    private void allocate(long regionBytes) {
        staged.ensure((long) plan.stagedRows() * regionRowBytes);
        stagedDevice.ensure((long) plan.stagedRows() * regionRowBytes);
        if (fp8) {
            stagedTokens.ensure((long) bound * rowBytes);
            stagedTokensDevice.ensure((long) bound * rowBytes);
        }
        send.ensure(worldSize * regionBytes);
        recv.ensure(worldSize * regionBytes);
        CudaCheck.check(
                cudaMemsetAsync(recv.at(0), 0, worldSize * regionBytes, group.stream()),
                "cudaMemsetAsync(regions)");
        lists.ensure(receivedAt + (long) Integer.BYTES * worldSize);
        grouped.ensure(
                (long) Math.max(1, slots * rows)
                        * hidden
                        * GpuDispatcher.expertDType(dtype).sizeBytes());
        combineSend.ensure((long) rows * rowBytes);
        combineRecv.ensure((long) rows * rowBytes);
        out.ensure((long) bound * hidden * Float.BYTES);
        hostOut.ensure((long) bound * hidden * Float.BYTES + (long) Integer.BYTES * worldSize);
    }

    /** Bytes of a dispatch region's row for these tokens: a token row, or an FP8 row. */
    static int regionRowBytes(int hidden, DType dtype, DispatchDType dispatchDType) {
        return dispatchDType == DispatchDType.FP8
                ? Fp8RowLayout.rowBytes(hidden)
                : hidden * dtype.sizeBytes();
    }

    /**
     * Routes the next steps by {@code next} (this rank's experts unchanged, other shares): the
     * grouping's lists are sized by the slots it started with.
     *
     * @throws IllegalArgumentException when {@code next} gives this rank another number of slots
     */
    public void use(Placement next) {
        Dispatcher.checkSlots(next, group.rank(), slots);
        plan.layout().use(next);
    }

    /** The most tokens a step may hold. */
    public int bound() {
        return bound;
    }

    /**
     * Stages a step of {@code numTokens} rows of {@code tokens} (in this dispatcher's dtype)
     * ({@code [T, H]} on the host) routed by {@code topkIds}/{@code topkWeights} ({@code [T, K]}):
     * the rows, the region headers and the index lists go to pinned memory, for {@link
     * #enqueueStaged} and {@link #enqueueDispatch} or a replay of a graph that captured them. The
     * stream must be idle.
     *
     * @throws IllegalArgumentException when {@code numTokens} exceeds the bound
     */
    public void stage(ByteBuffer tokens, int numTokens, int[] topkIds, float[] topkWeights) {
        ByteBuffer host = staged.hostView();
        plan.plan(host, numTokens, topkIds, topkWeights);
        (fp8 ? stagedTokens.hostView() : host).put(0, tokens, 0, numTokens * rowBytes);
        this.numTokens = numTokens;
        int regionRows = plan.regionRows();
        indexes.reset(16L * 3 + (long) Integer.BYTES * (worldSize * regionRows + bound + 1 + rows));
        packAt = indexes.ints(plan.packOrder(), worldSize * regionRows);
        returnedStartAt = indexes.ints(plan.returnedStart(), bound + 1);
        returnedAt = indexes.ints(plan.returnedRows(), rows);
    }

    /**
     * Enqueues the copies of what {@link #stage} staged to the device: the rows, the headers and
     * the index lists; {@link #tokens} are there once they ran.
     */
    public void enqueueStaged() {
        CUstream_st stream = group.stream();
        CudaCheck.check(
                cudaMemcpyAsync(
                        stagedDevice.at(0),
                        staged.at(0),
                        (long) plan.stagedRows() * regionRowBytes,
                        cudaMemcpyHostToDevice,
                        stream),
                "cudaMemcpyAsync(staged tokens)");
        if (fp8) {
            CudaCheck.check(
                    cudaMemcpyAsync(
                            stagedTokensDevice.at(0),
                            stagedTokens.at(0),
                            (long) bound * rowBytes,
                            cudaMemcpyHostToDevice,
                            stream),
                    "cudaMemcpyAsync(staged tokens)");
        }
        indexes.upload(stream);
    }

    /**
     * Enqueues the dispatch of what {@link #enqueueStaged} copied: the pack, the exchange and the
     * grouping. Returns the grouped rows: slot {@code s}'s at row {@code s * N * T}, {@link
     * #rowsPerSlot} each, those past what arrived left over from before.
     */
    public CudaMemory enqueueDispatch(long step) {
        CUstream_st stream = group.stream();
        int regionRows = plan.regionRows();
        long regionBytes = (long) regionRows * regionRowBytes;
        kernels.gatherRows(
                stagedDevice.at(0),
                indexes.at(packAt),
                send.at(0),
                regionRowBytes,
                worldSize * regionRows,
                stream);
        for (int d = 0; fp8 && d < worldSize; d++) {
            // each region's T token slots, quantized over the placeholders the gather copied
            kernels.quantizeFp8Rows(
                    stagedTokensDevice.at(0),
                    indexes.at(packAt + (long) d * regionRows * Integer.BYTES),
                    send.at(d * regionBytes),
                    hidden,
                    bound,
                    dtype,
                    stream);
        }
        group.enqueueAllToAllDevice(step, ExchangePhase.DISPATCH, send, recv, regionBytes);
        kernels.llGroup(
                recv.at(0),
                regionBytes,
                (long) bound * regionRowBytes,
                regionRows,
                worldSize,
                bound,
                topK,
                slots,
                lists.at(groupIndexAt),
                lists.at(startAt),
                lists.at(entryRowAt),
                lists.at(entryWeightAt),
                lists.at(receivedAt),
                stream);
        if (fp8) {
            kernels.dequantizeFp8Rows(
                    recv.at(0),
                    lists.at(groupIndexAt),
                    grouped.at(0),
                    hidden,
                    slots * rows,
                    GpuDispatcher.expertDType(dtype),
                    stream);
        } else if (dtype == DType.BF16) {
            kernels.gatherRows(
                    recv.at(0),
                    lists.at(groupIndexAt),
                    grouped.at(0),
                    rowBytes,
                    slots * rows,
                    stream);
        } else {
            kernels.widenRows(
                    recv.at(0),
                    lists.at(groupIndexAt),
                    grouped.at(0),
                    hidden,
                    slots * rows,
                    dtype,
                    stream);
        }
        return grouped;
    }

    /**
     * Rows of each local slot in the grouped order: {@code N * T} each, fixed (not to be written).
     */
    public int[] rowsPerSlot() {
        return perSlot;
    }

    /**
     * The staged tokens on the device once {@link #enqueueStaged} copied them: {@code [T, H]} in
     * this dispatcher's dtype, the first {@link #numTokens} the step's (the others left over, never
     * read back).
     */
    CudaMemory tokens() {
        return fp8 ? stagedTokensDevice : stagedDevice;
    }

    /**
     * Enqueues the combine: {@code expertOut} holds fp32 rows in the grouped order of the dispatch;
     * once the stream is done, {@link #output} holds each staged token's weighted sum over its
     * experts and {@link #receivedFrom} the dispatch's counts.
     */
    public void enqueueCombine(long step, CudaMemory expertOut) {
        enqueueCombine(step, expertOut, null);
    }

    /**
     * As {@link #enqueueCombine(long, CudaMemory)}, with {@code beforeOutput} enqueuing work on the
     * combined fp32 {@code [T, H]} rows before they are copied back (a layer's shared expert).
     */
    void enqueueCombine(
            long step, CudaMemory expertOut, @Nullable Consumer<CudaMemory> beforeOutput) {
        CUstream_st stream = group.stream();
        kernels.weightedSum(
                expertOut.at(0),
                lists.at(startAt),
                lists.at(entryRowAt),
                lists.at(entryWeightAt),
                combineSend.at(0),
                hidden,
                rows,
                dtype,
                stream);
        group.enqueueAllToAllDevice(
                step, ExchangePhase.COMBINE, combineSend, combineRecv, (long) bound * rowBytes);
        kernels.accumulate(
                combineRecv.at(0),
                indexes.at(returnedStartAt),
                indexes.at(returnedAt),
                out.at(0),
                hidden,
                bound,
                dtype,
                stream);
        if (beforeOutput != null) {
            beforeOutput.accept(out);
        }
        long outBytes = (long) bound * hidden * Float.BYTES;
        CudaCheck.check(
                cudaMemcpyAsync(hostOut.at(0), out.at(0), outBytes, cudaMemcpyDeviceToHost, stream),
                "cudaMemcpyAsync(output)");
        CudaCheck.check(
                cudaMemcpyAsync(
                        hostOut.at(outBytes),
                        lists.at(receivedAt),
                        (long) Integer.BYTES * worldSize,
                        cudaMemcpyDeviceToHost,
                        stream),
                "cudaMemcpyAsync(counts)");
    }

    /**
     * The combined rows, fp32 {@code [T, H]} in pinned memory (the first {@link #numTokens} are the
     * step's), once the stream is done.
     */
    public ByteBuffer output() {
        return hostOut.hostView();
    }

    /** Tokens staged by the last {@link #stage}. */
    public int numTokens() {
        return numTokens;
    }

    /**
     * Rows received from {@code rank} in the last dispatch, once the stream is done.
     *
     * @throws A2aException if {@code rank}'s region header was malformed ({@code ll_group} grouped
     *     the region as empty, so the step's results are wrong and it must fail)
     */
    public long receivedFrom(int rank) {
        int count = hostOut.hostView().getInt(bound * hidden * Float.BYTES + rank * Integer.BYTES);
        if (count < 0) {
            throw new A2aException(
                    "low-latency dispatch: the region header from rank "
                            + rank
                            + " is malformed (a count outside 0.."
                            + bound
                            + ", a slot outside -1.."
                            + (slots - 1)
                            + " or named twice by a token); the step fails");
        }
        return count;
    }

    /** The source-side layout of the last staged step. */
    public DispatchLayout layout() {
        return plan.layout();
    }

    private static long align(long offset) {
        return (offset + 15) & ~15L;
    }

    @Override
    public void close() {
        for (CudaMemory m :
                new CudaMemory[] {
                    staged,
                    stagedDevice,
                    stagedTokens,
                    stagedTokensDevice,
                    send,
                    recv,
                    lists,
                    grouped,
                    combineSend,
                    combineRecv,
                    out,
                    hostOut
                }) {
            m.close();
        }
        indexes.close();
    }
}
