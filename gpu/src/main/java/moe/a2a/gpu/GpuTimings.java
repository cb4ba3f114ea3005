package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cudart.cudaEventCreate;
import static org.bytedeco.cuda.global.cudart.cudaEventDestroy;
import static org.bytedeco.cuda.global.cudart.cudaEventElapsedTime;
import static org.bytedeco.cuda.global.cudart.cudaEventRecord;
import static org.bytedeco.cuda.global.cudart.cudaEventSynchronize;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyAsync;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyDeviceToDevice;
import static org.bytedeco.cuda.global.cudart.cudaMemsetAsync;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Locale;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.nccl.NcclCommunicator;
import moe.a2a.dispatch.DispatchLayout;
import moe.a2a.dispatch.Placement;
import moe.a2a.kernels.DType;
import moe.a2a.workload.BenchRouting;
import moe.a2a.workload.BenchWorkload;
import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.BytePointer;

/**
 * {@link GpuCheck}'s timings at the {@code prefill} workload's sizes for rank 0: the pack (bf16,
 * and FP8 with its quantization) and unpack kernels, the source-side sum and NCCL's send/recv to
 * itself, each against a device-to-device copy of the same bytes; medians of CUDA-event times.
 */
final class GpuTimings {
    private static final int WARMUP = 5;
    private static final int ITERS = 20;

    private GpuTimings() {}

    /**
     * Pack, source-side sum and the NCCL exchange at the prefill workload's sizes, against a device
     * copy.
     */
    static void run(NcclCommunicator comm, CudaKernels kernels, CheckTable table) {
        BenchWorkload prefill = BenchWorkload.named("prefill");
        int rowBytes = prefill.rowBytes();
        DispatchLayout layout =
                new DispatchLayout(Placement.contiguous(prefill.experts(), prefill.worldSize()), 0);
        layout.compute(BenchRouting.topkIds(prefill, 0), prefill.tokens(), prefill.topK());
        int rows = layout.rankOffsets(prefill.worldSize());
        long bytes = (long) rows * rowBytes;
        RoutePlan unpack = receivedByRankZero(prefill);
        int[] pack = unpack.packOrder(layout);
        int grouped = unpack.numGrouped();
        long recvBytes = (long) unpack.numReceived() * rowBytes;
        CUstream_st stream = comm.stream();
        try (CudaMemory src = CudaMemory.device().ensure((long) prefill.tokens() * rowBytes);
                CudaMemory dst = CudaMemory.device().ensure(bytes);
                CudaMemory back = CudaMemory.device().ensure(bytes);
                CudaMemory sums =
                        CudaMemory.device()
                                .ensure((long) prefill.tokens() * prefill.hidden() * Float.BYTES);
                CudaMemory received = CudaMemory.device().ensure(Math.max(1, recvBytes));
                CudaMemory groupedRows =
                        CudaMemory.device().ensure(Math.max(1, (long) grouped * rowBytes));
                CudaMemory groupedCopy =
                        CudaMemory.device().ensure(Math.max(1, (long) grouped * rowBytes));
                IndexUpload index = new IndexUpload()) {
            CudaCheck.check(
                    cudaMemsetAsync(src.at(0), 0, src.capacity(), stream), "cudaMemsetAsync");
            CudaCheck.check(
                    cudaMemsetAsync(received.at(0), 0, received.capacity(), stream),
                    "cudaMemsetAsync");
            index.reset(
                    16L * 4 + (long) Integer.BYTES * (2L * rows + prefill.tokens() + 1 + grouped));
            long groupAt = index.ints(unpack.groupedOrder(), grouped);
            long packAt = index.ints(pack, rows);
            long returnedAt = index.ints(unpack.returnedRows(layout), rows);
            long startAt = index.ints(unpack.returnedStart(), prefill.tokens() + 1);
            index.upload(stream);

            // as many bytes as the pack writes; src holds only the tokens, back holds `bytes`
            double copy = copyMs(stream, back, dst, bytes);
            table.row("device-to-device copy (baseline)", timing(copy, bytes, copy), true);
            double packMs =
                    medianMs(
                            stream,
                            () ->
                                    kernels.gatherRows(
                                            src.at(0),
                                            index.at(packAt),
                                            dst.at(0),
                                            rowBytes,
                                            rows,
                                            stream));
            table.row(
                    "pack kernel, prefill rank 0 (" + rows + " rows)",
                    timing(packMs, bytes, copy),
                    true);
            double fp8PackMs =
                    medianMs(
                            stream,
                            () ->
                                    kernels.quantizeFp8Rows(
                                            src.at(0),
                                            index.at(packAt),
                                            dst.at(0),
                                            prefill.hidden(),
                                            rows,
                                            DType.BF16,
                                            stream));
            table.row(
                    "FP8 pack kernel (quantize), prefill rank 0 ("
                            + rows
                            + " rows; the bf16 bytes read)",
                    timing(fp8PackMs, bytes, copy),
                    true);
            double unpackMs =
                    medianMs(
                            stream,
                            () ->
                                    kernels.gatherRows(
                                            received.at(0),
                                            index.at(groupAt),
                                            groupedRows.at(0),
                                            rowBytes,
                                            grouped,
                                            stream));
            long groupedBytes = (long) grouped * rowBytes;
            double copyGrouped = copyMs(stream, groupedRows, groupedCopy, groupedBytes);
            table.row(
                    "unpack kernel (group by expert), prefill rank 0 (" + grouped + " rows)",
                    timing(unpackMs, groupedBytes, copyGrouped),
                    true);
            double sumMs =
                    medianMs(
                            stream,
                            () ->
                                    kernels.accumulate(
                                            dst.at(0),
                                            index.at(startAt),
                                            index.at(returnedAt),
                                            sums.at(0),
                                            prefill.hidden(),
                                            prefill.tokens(),
                                            DType.BF16,
                                            stream));
            table.row("combine sum at source, prefill rank 0", timing(sumMs, bytes, copy), true);
            long[] counts = {bytes};
            long[] step = {0};
            double ncclMs =
                    medianMs(
                            stream,
                            () ->
                                    comm.allToAllVDevice(
                                            step[0]++,
                                            ExchangePhase.DISPATCH,
                                            dst,
                                            counts,
                                            back,
                                            counts));
            table.row(
                    "NCCL send/recv to self, prefill rank 0 bytes",
                    timing(ncclMs, bytes, copy),
                    true);
        }
        llGroup(kernels, stream, table);
    }

    /**
     * The low-latency grouping ({@code ll_group}, one block) on the headers the {@code decode}
     * workload's sources send rank 0, against a device copy of the regions' header bytes: the
     * kernel reads every header once per local slot, a cost that grows with the sources, the bound
     * and the slots, and no world-size-1 step shows.
     */
    private static void llGroup(CudaKernels kernels, CUstream_st stream, CheckTable table) {
        BenchWorkload decode = BenchWorkload.named("decode");
        int sources = decode.worldSize();
        int bound = decode.tokens();
        int topK = decode.topK();
        int rowBytes = decode.rowBytes();
        Placement placement = Placement.contiguous(decode.experts(), sources);
        int slots = placement.localExperts(0);
        int headerBytes = LowLatencyPlan.headerBytes(bound, topK);
        long headerOffset = (long) bound * rowBytes;
        int regionRows = new LowLatencyPlan(placement, 0, topK, bound, rowBytes).regionRows();
        long regionBytes = (long) regionRows * rowBytes;
        ByteBuffer recv =
                ByteBuffer.allocateDirect(Math.toIntExact(sources * regionBytes))
                        .order(ByteOrder.LITTLE_ENDIAN);
        for (int src = 0; src < sources; src++) {
            LowLatencyPlan plan = new LowLatencyPlan(placement, src, topK, bound, rowBytes);
            ByteBuffer staged =
                    ByteBuffer.allocate(plan.stagedRows() * rowBytes)
                            .order(ByteOrder.LITTLE_ENDIAN);
            float[] weights = new float[bound * topK];
            Arrays.fill(weights, 1f / topK);
            plan.plan(staged, bound, BenchRouting.topkIds(decode, src), weights);
            // rank 0's header from this source, where its region's header lands on rank 0
            recv.put(
                    Math.toIntExact(src * regionBytes + headerOffset),
                    staged,
                    bound * rowBytes,
                    headerBytes);
        }
        int rows = sources * bound;
        try (CudaMemory received = CudaMemory.device().ensure(recv.capacity());
                CudaMemory headers = CudaMemory.device().ensure((long) sources * headerBytes);
                CudaMemory headersCopy = CudaMemory.device().ensure((long) sources * headerBytes);
                CudaMemory lists =
                        CudaMemory.device()
                                .ensure(
                                        (long) Integer.BYTES
                                                * ((long) slots * rows
                                                        + rows
                                                        + 1
                                                        + 2L * rows * topK
                                                        + sources))) {
            received.upload(new BytePointer(recv), recv.capacity(), "ll_group headers");
            long startAt = (long) Integer.BYTES * slots * rows;
            long entryRowAt = startAt + (long) Integer.BYTES * (rows + 1);
            long entryWeightAt = entryRowAt + (long) Integer.BYTES * rows * topK;
            long receivedAt = entryWeightAt + (long) Integer.BYTES * rows * topK;
            double copy = copyMs(stream, headers, headersCopy, (long) sources * headerBytes);
            double ms =
                    medianMs(
                            stream,
                            () ->
                                    kernels.llGroup(
                                            received.at(0),
                                            regionBytes,
                                            headerOffset,
                                            regionRows,
                                            sources,
                                            bound,
                                            topK,
                                            slots,
                                            lists.at(0),
                                            lists.at(startAt),
                                            lists.at(entryRowAt),
                                            lists.at(entryWeightAt),
                                            lists.at(receivedAt),
                                            stream));
            table.row(
                    String.format(
                            Locale.ROOT,
                            "ll_group, decode rank 0 (%d sources, T = %d, top-%d, %d slots)",
                            sources,
                            bound,
                            topK,
                            slots),
                    String.format(
                            Locale.ROOT,
                            "%.1f us, %.1fx the copy's time of the headers (%.1f KB)",
                            ms * 1e3,
                            ms / copy,
                            sources * headerBytes / 1e3),
                    true);
        }
    }

    /** Rank 0's grouping in the prefill workload: the routes every source sends it, planned. */
    private static RoutePlan receivedByRankZero(BenchWorkload w) {
        Placement placement = Placement.contiguous(w.experts(), w.worldSize());
        RoutePlan plan = new RoutePlan(placement, 0, w.topK());
        int[][] rows = BenchRouting.rows(w);
        int numRecv = 0;
        for (int src = 0; src < w.worldSize(); src++) {
            numRecv += rows[src][0];
        }
        ByteBuffer routes =
                ByteBuffer.allocate(numRecv * plan.routeRowBytes()).order(ByteOrder.LITTLE_ENDIAN);
        int at = 0;
        for (int src = 0; src < w.worldSize(); src++) {
            int[] ids = BenchRouting.topkIds(w, src);
            float[] weights = new float[ids.length];
            Arrays.fill(weights, 1f / w.topK());
            DispatchLayout layout = new DispatchLayout(placement, src);
            layout.compute(ids, w.tokens(), w.topK());
            plan.writeRoutes(layout, 0, routes, at, weights);
            at += rows[src][0] * plan.routeRowBytes();
        }
        plan.group(routes, numRecv);
        return plan;
    }

    /** The baseline: median milliseconds of a device-to-device copy of {@code bytes}. */
    private static double copyMs(CUstream_st stream, CudaMemory from, CudaMemory to, long bytes) {
        return medianMs(
                stream,
                () ->
                        CudaCheck.check(
                                cudaMemcpyAsync(
                                        to.at(0),
                                        from.at(0),
                                        bytes,
                                        cudaMemcpyDeviceToDevice,
                                        stream),
                                "cudaMemcpyAsync(D2D)"));
    }

    /** Median milliseconds of {@code op} on {@code stream}, timed with CUDA events. */
    private static double medianMs(CUstream_st stream, Runnable op) {
        CUevent_st begin = new CUevent_st();
        CUevent_st end = new CUevent_st();
        CudaCheck.check(cudaEventCreate(begin), "cudaEventCreate");
        CudaCheck.check(cudaEventCreate(end), "cudaEventCreate");
        try {
            double[] ms = new double[ITERS];
            float[] elapsed = new float[1];
            for (int i = -WARMUP; i < ITERS; i++) {
                CudaCheck.check(cudaEventRecord(begin, stream), "cudaEventRecord");
                op.run();
                CudaCheck.check(cudaEventRecord(end, stream), "cudaEventRecord");
                CudaCheck.check(cudaEventSynchronize(end), "cudaEventSynchronize");
                CudaCheck.check(cudaEventElapsedTime(elapsed, begin, end), "cudaEventElapsedTime");
                if (i >= 0) {
                    ms[i] = elapsed[0];
                }
            }
            Arrays.sort(ms);
            return ms[ITERS / 2];
        } finally {
            cudaEventDestroy(begin);
            cudaEventDestroy(end);
        }
    }

    private static String timing(double ms, long bytes, double copyMs) {
        return String.format(
                Locale.ROOT,
                "%.3f ms, %.1f GB/s, %.2fx the copy's time (%.1f MB)",
                ms,
                bytes / ms / 1e6,
                ms / copyMs,
                bytes / 1e6);
    }
}
