package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cudart.cudaStreamSynchronize;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.nccl.NcclCommunicator;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.DispatchLayout;
import moe.a2a.dispatch.Dispatcher;
import moe.a2a.dispatch.Placement;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.Fp8RowLayout;
import org.bytedeco.cuda.cudart.CUstream_st;

/**
 * One rank's dispatch and combine with token rows in device memory, over NCCL. The layout is
 * computed on the host (as the CPU {@code Dispatcher} does) and the rows move only on the device,
 * in the step's dtype as on the CPU path: packed by a gather kernel, exchanged by {@link
 * NcclCommunicator#allToAllVDevice}, grouped by local expert, as bf16 rows for a bf16 step's bf16
 * GEMMs and as fp32 rows for the fp32 GEMMs of fp16 and fp32 steps (with FP8 dispatch, the pack
 * quantizes and the grouping dequantizes). Combine weights and sums each received token's expert
 * rows (one row per token goes back, in the step's dtype) and sums the returned rows at the source.
 * The routing (local slot and weight per choice) travels in a small host-staged exchange beside the
 * rows; {@link RoutePlan} turns it into the kernels' index lists.
 *
 * <p>The sums run in the CPU path's order without fused multiply-adds, so with the same finite
 * inputs the results are bit-identical to {@code Dispatcher}'s (a NaN comes out as the device's
 * canonical one, where the CPU keeps an operand's payload). Owned by the rank's thread.
 */
public final class GpuDispatcher implements AutoCloseable {
    private final DeviceGroup group;
    private final CudaKernels kernels;
    private final int hidden;
    private final int topK;
    private final int worldSize;
    private final boolean fp8;
    private final DispatchLayout layout;
    private final RoutePlan plan;
    private final long[] sendRows;
    private final long[] recvRows;
    private final long[] sendBytes;
    private final long[] recvBytes;
    private final CudaMemory send = CudaMemory.device();
    private final CudaMemory recv = CudaMemory.device();
    private final CudaMemory grouped = CudaMemory.device();
    private final CudaMemory combineSend = CudaMemory.device();
    private final CudaMemory combineRecv = CudaMemory.device();
    private final IndexUpload indexes = new IndexUpload();
    private ByteBuffer routes = ByteBuffer.allocateDirect(0).order(ByteOrder.LITTLE_ENDIAN);
    private int numTokens;

    /**
     * The last dispatch's dtype, and its rows' bytes: as the tokens came, and as dispatch sent
     * them.
     */
    private DType dtype = DType.BF16;

    private int rowBytes;
    private int sentRowBytes;
    private long weightedStart;
    private long weightedRow;
    private long weightedWeight;
    private long accumulateStart;
    private long accumulateIndex;
    private long step;

    public GpuDispatcher(
            NcclCommunicator comm, Placement placement, int hidden, int topK, CudaKernels kernels) {
        this(comm, placement, hidden, topK, DispatchDType.BF16, kernels);
    }

    /** Over NCCL's communicator of every rank, rows dispatched as {@code dispatchDType}. */
    public GpuDispatcher(
            NcclCommunicator comm,
            Placement placement,
            int hidden,
            int topK,
            DispatchDType dispatchDType,
            CudaKernels kernels) {
        this(groupOf(comm), placement, hidden, topK, dispatchDType, kernels);
    }

    private static DeviceGroup groupOf(NcclCommunicator comm) {
        DeviceGroup group = DeviceGroup.of(comm);
        if (group == null) {
            throw new IllegalStateException("an NCCL communicator without its device group");
        }
        return group;
    }

    /**
     * With rows dispatched as {@code dispatchDType}: bf16 as they are, or FP8 (quantized by the
     * pack, bit for bit as the CPU path does, and dequantized to bf16 by the grouping).
     */
    GpuDispatcher(
            DeviceGroup group,
            Placement placement,
            int hidden,
            int topK,
            DispatchDType dispatchDType,
            CudaKernels kernels) {
        this.group = group;
        this.kernels = kernels;
        this.hidden = hidden;
        this.topK = topK;
        this.worldSize = group.size();
        this.fp8 = dispatchDType == DispatchDType.FP8;
        this.layout = new DispatchLayout(placement, group.rank());
        this.plan = new RoutePlan(placement, group.rank(), topK);
        this.sendRows = new long[worldSize];
        this.recvRows = new long[worldSize];
        this.sendBytes = new long[worldSize];
        this.recvBytes = new long[worldSize];
    }

    /**
     * Routes the next dispatches by {@code next}: the same experts in this rank's slots, other
     * shares (as a layer's placement changes while serving).
     *
     * @throws IllegalArgumentException when {@code next} gives this rank another number of slots
     */
    public void use(Placement next) {
        Dispatcher.checkSlots(next, group.rank(), plan.rowsPerSlot().length);
        layout.use(next);
    }

    /**
     * Dispatches {@code numTokens} rows of {@code tokens} ({@code [T, H]} in {@code dtype} on the
     * device) routed by {@code topkIds}/{@code topkWeights} ({@code [T, K]}). Returns the received
     * rows grouped by local expert ({@link #rowsPerSlot()} of each; bf16 for a bf16 step, fp32
     * otherwise: {@link #expertDType}), valid until the next dispatch. Every rank calls it in the
     * same step with the same dtype.
     */
    public CudaMemory dispatch(
            CudaMemory tokens, int numTokens, DType dtype, int[] topkIds, float[] topkWeights) {
        this.numTokens = numTokens;
        this.dtype = dtype;
        this.rowBytes = hidden * dtype.sizeBytes();
        this.sentRowBytes = fp8 ? Fp8RowLayout.rowBytes(hidden) : rowBytes;
        DType grouping = expertDType(dtype);
        long s = step++;
        layout.compute(topkIds, numTokens, topK);
        for (int r = 0; r < worldSize; r++) {
            sendRows[r] = layout.tokensPerRank(r);
        }
        group.world().allToAllCounts(s, ExchangePhase.DISPATCH, sendRows, recvRows);
        int totalSend = layout.rankOffsets(worldSize);
        int numRecv = 0;
        for (int r = 0; r < worldSize; r++) {
            numRecv += (int) recvRows[r];
            sendBytes[r] = sendRows[r] * plan.routeRowBytes();
            recvBytes[r] = recvRows[r] * plan.routeRowBytes();
        }
        if (routes.capacity() < (long) numRecv * plan.routeRowBytes()) {
            routes =
                    ByteBuffer.allocateDirect(numRecv * plan.routeRowBytes())
                            .order(ByteOrder.LITTLE_ENDIAN);
        }
        group.world()
                .allToAllV(
                        s,
                        ExchangePhase.DISPATCH,
                        (peer, dst, at) -> plan.writeRoutes(layout, peer, dst, at, topkWeights),
                        sendBytes,
                        routes,
                        recvBytes);
        int numGrouped = plan.group(routes, numRecv);

        // pack order, grouping, combine's lists (start, rows, weights), returned rows and their
        // starts
        indexes.reset(
                16L * 7
                        + (long) Integer.BYTES
                                * (2L * totalSend + 2L * numGrouped + numRecv + numTokens + 2)
                        + (long) Float.BYTES * numGrouped);
        long packIndex = indexes.ints(plan.packOrder(layout), totalSend);
        long groupIndex = indexes.ints(plan.groupedOrder(), numGrouped);
        weightedStart = indexes.ints(plan.combineStart(), numRecv + 1);
        weightedRow = indexes.ints(plan.combineRow(), numGrouped);
        weightedWeight = indexes.floats(plan.combineWeight(), numGrouped);
        accumulateIndex = indexes.ints(plan.returnedRows(layout), totalSend);
        accumulateStart = indexes.ints(plan.returnedStart(), numTokens + 1);
        indexes.upload(group.stream());

        send.ensure(Math.max(1, (long) totalSend * sentRowBytes));
        recv.ensure(Math.max(1, (long) numRecv * sentRowBytes));
        grouped.ensure(Math.max(1, (long) numGrouped * hidden * grouping.sizeBytes()));
        if (fp8) {
            kernels.quantizeFp8Rows(
                    tokens.at(0),
                    indexes.at(packIndex),
                    send.at(0),
                    hidden,
                    totalSend,
                    dtype,
                    group.stream());
        } else {
            kernels.gatherRows(
                    tokens.at(0),
                    indexes.at(packIndex),
                    send.at(0),
                    rowBytes,
                    totalSend,
                    group.stream());
        }
        for (int r = 0; r < worldSize; r++) {
            sendBytes[r] = sendRows[r] * sentRowBytes;
            recvBytes[r] = recvRows[r] * sentRowBytes;
        }
        group.allToAllVDevice(s, ExchangePhase.DISPATCH, send, sendBytes, recv, recvBytes);
        if (fp8) {
            kernels.dequantizeFp8Rows(
                    recv.at(0),
                    indexes.at(groupIndex),
                    grouped.at(0),
                    hidden,
                    numGrouped,
                    grouping,
                    group.stream());
        } else if (grouping != dtype) {
            kernels.widenRows(
                    recv.at(0),
                    indexes.at(groupIndex),
                    grouped.at(0),
                    hidden,
                    numGrouped,
                    dtype,
                    group.stream());
        } else {
            kernels.gatherRows(
                    recv.at(0),
                    indexes.at(groupIndex),
                    grouped.at(0),
                    rowBytes,
                    numGrouped,
                    group.stream());
        }
        return grouped;
    }

    /**
     * The rows the experts take for a step in {@code dtype}: bf16 for bf16 GEMMs, else fp32, as
     * fp32 GEMMs keep an fp16 or fp32 step's precision.
     */
    public static DType expertDType(DType dtype) {
        return dtype == DType.BF16 ? DType.BF16 : DType.FP32;
    }

    /** Rows per local expert slot of the last dispatch, in the grouped order. */
    public int[] rowsPerSlot() {
        return plan.rowsPerSlot().clone();
    }

    /**
     * The received rows of the last dispatch, in receive order (before grouping), as dispatch moved
     * them ({@link #sentRowBytes} each).
     */
    public CudaMemory received() {
        return recv;
    }

    /** The stream the rows move on: the communicator's. */
    public CUstream_st stream() {
        return group.stream();
    }

    /** The source-side layout of the last dispatch. */
    public DispatchLayout layout() {
        return layout;
    }

    /** Rows received from {@code rank} in the last dispatch. */
    public long receivedFrom(int rank) {
        return recvRows[rank];
    }

    /**
     * Bytes of a row as the last dispatch moved it: in the step's dtype, or an FP8 row with its
     * block scales.
     */
    public int sentRowBytes() {
        return sentRowBytes;
    }

    /** Bytes of routing sent beside each row. */
    public int routeRowBytes() {
        return plan.routeRowBytes();
    }

    /** Tokens received by the last dispatch. */
    public int numReceived() {
        return plan.numReceived();
    }

    /** Bytes of a row combine moves back: the token in the last dispatch's dtype. */
    public int combineRowBytes() {
        return rowBytes;
    }

    /**
     * Combines: {@code expertOut} holds fp32 rows in the grouped order of the last dispatch; on
     * return (the stream synchronized) {@code out} holds each of this rank's tokens' weighted sums
     * over all its experts, fp32 {@code [T, H]} on the device, its rows having travelled in the
     * step's dtype.
     */
    public void combine(CudaMemory expertOut, CudaMemory out) {
        int numRecv = plan.numReceived();
        combineSend.ensure(Math.max(1, (long) numRecv * rowBytes));
        combineRecv.ensure(Math.max(1, (long) layout.rankOffsets(worldSize) * rowBytes));
        out.ensure(Math.max(1, (long) numTokens * hidden * Float.BYTES));
        kernels.weightedSum(
                expertOut.at(0),
                indexes.at(weightedStart),
                indexes.at(weightedRow),
                indexes.at(weightedWeight),
                combineSend.at(0),
                hidden,
                numRecv,
                dtype,
                group.stream());
        for (int r = 0; r < worldSize; r++) {
            sendBytes[r] = recvRows[r] * rowBytes;
            recvBytes[r] = sendRows[r] * rowBytes;
        }
        group.allToAllVDevice(
                step - 1, ExchangePhase.COMBINE, combineSend, sendBytes, combineRecv, recvBytes);
        kernels.accumulate(
                combineRecv.at(0),
                indexes.at(accumulateStart),
                indexes.at(accumulateIndex),
                out.at(0),
                hidden,
                numTokens,
                dtype,
                group.stream());
        CudaCheck.check(cudaStreamSynchronize(group.stream()), "cudaStreamSynchronize");
    }

    @Override
    public void close() {
        send.close();
        recv.close();
        grouped.close();
        combineSend.close();
        combineRecv.close();
        indexes.close();
    }
}
