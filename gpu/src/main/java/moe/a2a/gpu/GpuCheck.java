package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cudart.cudaEventCreate;
import static org.bytedeco.cuda.global.cudart.cudaEventDestroy;
import static org.bytedeco.cuda.global.cudart.cudaEventElapsedTime;
import static org.bytedeco.cuda.global.cudart.cudaEventRecord;
import static org.bytedeco.cuda.global.cudart.cudaEventSynchronize;
import static org.bytedeco.cuda.global.cudart.cudaMemcpy;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyAsync;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyDeviceToDevice;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyDeviceToHost;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyHostToDevice;
import static org.bytedeco.cuda.global.cudart.cudaMemsetAsync;
import static org.bytedeco.cuda.global.cudart.cudaStreamSynchronize;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.bench.BenchRouting;
import moe.a2a.bench.BenchWorkload;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.local.LocalGroup;
import moe.a2a.comm.nccl.NcclCommunicator;
import moe.a2a.dispatch.DType;
import moe.a2a.dispatch.DispatchLayout;
import moe.a2a.dispatch.DispatchResult;
import moe.a2a.dispatch.Dispatcher;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.SeededWeights;
import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.BytePointer;

/**
 * The GPU machine check ({@code scripts/gpu-check.sh}): probe; dispatch + combine on the GPU at
 * world size 1 (NCCL send/recv to itself) against the CPU {@code Dispatcher} on the same inputs;
 * the layer with cuBLAS experts against the scalar reference; kernel and NCCL timings against a
 * device-to-device copy of the same bytes. Prints a table last; exits 0 when every check passed,
 * 1 when one failed, 3 without a usable GPU.
 */
public final class GpuCheck {
    private static final int TOKENS = 256;
    private static final int HIDDEN = 512;
    private static final int FFN = 1024;
    private static final int EXPERTS = 8;
    private static final int TOP_K = 2;
    private static final int WARMUP = 5;
    private static final int ITERS = 20;

    private final List<String[]> table = new ArrayList<>();
    private boolean failed;

    public static void main(String[] args) {
        Path cuda = null;
        Path nccl = null;
        int device = 0;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--cuda-lib-dir" -> cuda = Path.of(args[++i]);
                case "--nccl-lib-dir" -> nccl = Path.of(args[++i]);
                case "--device" -> device = Integer.parseInt(args[++i]);
                default -> {
                    System.err.println("usage: GpuCheck [--cuda-lib-dir DIR] [--nccl-lib-dir DIR] [--device N]");
                    System.exit(2);
                }
            }
        }
        System.exit(new GpuCheck().run(GpuLibraries.resolve(cuda, nccl), device));
    }

    int run(GpuLibraries libraries, int device) {
        System.out.println("libraries: " + libraries.describe());
        GpuProbe.Result probe = GpuProbe.probe(libraries);
        row("probe", probe.describe(), probe.usable());
        if (!probe.usable()) {
            print();
            return 3;
        }
        try (NcclCommunicator comm = NcclCommunicator.create(NcclCommunicator.newUniqueId(), 0, 1, device,
                TimeUnit.SECONDS.toNanos(60));
                CudaKernels kernels = CudaKernels.load(device)) {
            System.out.println("kernels compiled for " + kernels.arch());
            checkAgainstCpu(comm, kernels);
            timeKernelsAndExchange(comm, kernels);
        } catch (RuntimeException e) {
            e.printStackTrace();
            row("run", "failed: " + e, false);
        }
        print();
        return failed ? 1 : 0;
    }

    /** World size 1 on both paths, the same seeded tokens and routing. */
    private void checkAgainstCpu(NcclCommunicator comm, CudaKernels kernels) {
        SplittableRandom random = new SplittableRandom(42);
        int rowBytes = HIDDEN * Short.BYTES;
        ByteBuffer tokens = ByteBuffer.allocateDirect(TOKENS * rowBytes).order(ByteOrder.LITTLE_ENDIAN);
        float[] x = new float[TOKENS * HIDDEN];
        for (int i = 0; i < x.length; i++) {
            short b = DType.floatToBf16((float) random.nextDouble(-1, 1));
            tokens.putShort(i * Short.BYTES, b);
            x[i] = DType.bf16ToFloat(b);
        }
        int[] ids = new int[TOKENS * TOP_K];
        float[] weights = new float[TOKENS * TOP_K];
        for (int t = 0; t < TOKENS; t++) {
            int first = random.nextInt(EXPERTS);
            int second = (first + 1 + random.nextInt(EXPERTS - 1)) % EXPERTS;
            ids[t * TOP_K] = first;
            ids[t * TOP_K + 1] = second;
            float w = (float) random.nextDouble(0.2, 0.8);
            weights[t * TOP_K] = w;
            weights[t * TOP_K + 1] = 1 - w;
        }
        Placement placement = Placement.contiguous(EXPERTS, 1);

        // CPU path: in-process group of one, identity experts.
        Dispatcher cpu = new Dispatcher(new LocalGroup(1).communicator(0), placement, HIDDEN, TOP_K);
        DispatchResult cpuResult = cpu.dispatch(tokens, TOKENS, DType.BF16, ids, weights);
        int numRecv = cpuResult.numRecvTokens();
        ByteBuffer cpuRecv = ByteBuffer.allocateDirect(numRecv * rowBytes).order(ByteOrder.LITTLE_ENDIAN);
        for (int j = 0; j < numRecv; j++) {
            cpuResult.copyRecvToken(j, cpuRecv, j * rowBytes);
        }
        FloatBuffer identity = ByteBuffer.allocateDirect(cpuResult.numExpertRows() * HIDDEN * Float.BYTES)
                .order(ByteOrder.nativeOrder()).asFloatBuffer();
        int at = 0;
        for (int slot = 0; slot < cpuResult.handle().localExperts(); slot++) {
            cpuResult.gather(slot, identity, at * HIDDEN);
            at += cpuResult.handle().recvTokensPerLocalExpert(slot);
        }
        float[] cpuOut = new float[TOKENS * HIDDEN];
        cpu.combine(identity, cpuResult.handle(), cpuOut);

        // GPU path on the same inputs.
        CUstream_st stream = comm.stream();
        try (CudaMemory deviceTokens = CudaMemory.device().ensure((long) TOKENS * rowBytes);
                CudaMemory expertOut = CudaMemory.device();
                CudaMemory out = CudaMemory.device();
                GpuDispatcher gpu = new GpuDispatcher(comm, placement, HIDDEN, TOP_K, kernels);
                GpuExperts experts = new GpuExperts(new Bf16Weights(new SeededWeights(7, EXPERTS, HIDDEN, FFN, 1)), 0,
                        placement, 0, kernels)) {
            CudaCheck.check(cudaMemcpy(deviceTokens.at(0), new BytePointer(tokens), (long) TOKENS * rowBytes,
                    cudaMemcpyHostToDevice), "cudaMemcpy(tokens)");
            CudaMemory grouped = gpu.dispatch(deviceTokens, TOKENS, ids, weights);
            sync(stream);
            ByteBuffer gpuRecv = download(gpu.received(), (long) gpu.numReceived() * rowBytes);
            boolean exchangeExact = gpu.numReceived() == numRecv && gpuRecv.equals(cpuRecv);
            row("dispatch rows vs CPU (world size 1)", (exchangeExact ? "bit-exact" : "DIFFERENT") + ", " + numRecv
                    + " rows of " + rowBytes + " B", exchangeExact);

            int groupedRows = Arrays.stream(gpu.rowsPerSlot()).sum();
            expertOut.ensure((long) groupedRows * HIDDEN * Float.BYTES);
            kernels.bf16ToFp32(grouped.at(0), expertOut.at(0), (long) groupedRows * HIDDEN, stream);
            gpu.combine(expertOut, out);
            float[] gpuOut = downloadFloats(out, TOKENS * HIDDEN);
            int differing = 0;
            for (int i = 0; i < gpuOut.length; i++) {
                differing += Float.floatToRawIntBits(gpuOut[i]) == Float.floatToRawIntBits(cpuOut[i]) ? 0 : 1;
            }
            row("combine, identity experts, vs CPU", differing == 0 ? "bit-exact" : differing + " of " + gpuOut.length
                    + " values differ", differing == 0);

            // The layer with cuBLAS experts (same dispatch) against the scalar reference.
            experts.forward(grouped, gpu.rowsPerSlot(), expertOut, stream);
            gpu.combine(expertOut, out);
            float[] layer = downloadFloats(out, TOKENS * HIDDEN);
            float[] reference = new ReferenceMoeLayer(new Bf16Weights(new SeededWeights(7, EXPERTS, HIDDEN, FFN, 1)))
                    .forward(0, x, TOKENS, TOP_K, ids, weights);
            double worst = worstOfTolerance(layer, reference);
            row("layer, cuBLAS bf16 experts, vs reference", String.format(Locale.ROOT,
                    "worst error %.2f of the bf16 tolerance (2^-6 of the row's max)", worst), worst <= 1);
        }
    }

    /** Pack, source-side sum and the NCCL exchange at the prefill workload's sizes, against a device copy. */
    private void timeKernelsAndExchange(NcclCommunicator comm, CudaKernels kernels) {
        BenchWorkload prefill = BenchWorkload.named("prefill");
        int rowBytes = prefill.rowBytes();
        DispatchLayout layout = new DispatchLayout(Placement.contiguous(prefill.experts(), prefill.worldSize()));
        layout.compute(BenchRouting.topkIds(prefill, 0), prefill.tokens(), prefill.topK());
        int rows = layout.rankOffsets(prefill.worldSize());
        long bytes = (long) rows * rowBytes;
        int[] pack = RoutePlan.packOrder(layout);
        RoutePlan unpack = receivedByRankZero(prefill);
        int grouped = unpack.numGrouped();
        long recvBytes = (long) unpack.numReceived() * rowBytes;
        CUstream_st stream = comm.stream();
        try (CudaMemory src = CudaMemory.device().ensure((long) prefill.tokens() * rowBytes);
                CudaMemory dst = CudaMemory.device().ensure(bytes);
                CudaMemory back = CudaMemory.device().ensure(bytes);
                CudaMemory sums = CudaMemory.device().ensure((long) prefill.tokens() * prefill.hidden() * Float.BYTES);
                CudaMemory received = CudaMemory.device().ensure(Math.max(1, recvBytes));
                CudaMemory groupedRows = CudaMemory.device().ensure(Math.max(1, (long) grouped * rowBytes));
                CudaMemory groupedCopy = CudaMemory.device().ensure(Math.max(1, (long) grouped * rowBytes));
                IndexUpload index = new IndexUpload()) {
            CudaCheck.check(cudaMemsetAsync(src.at(0), 0, src.capacity(), stream), "cudaMemsetAsync");
            CudaCheck.check(cudaMemsetAsync(received.at(0), 0, received.capacity(), stream), "cudaMemsetAsync");
            index.reset(16L * 4 + (long) Integer.BYTES * (2L * rows + prefill.tokens() + 1 + grouped));
            long groupAt = index.ints(unpack.groupedOrder(), grouped);
            long packAt = index.ints(pack, rows);
            int[] start = new int[prefill.tokens() + 1];
            int[] returned = RoutePlan.returnedRows(layout, start);
            long returnedAt = index.ints(returned, rows);
            long startAt = index.ints(start, start.length);
            index.upload(stream);

            double copy = medianMs(stream, () -> CudaCheck.check(cudaMemcpyAsync(dst.at(0), src.at(0), bytes,
                    cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync(D2D)"));
            row("device-to-device copy (baseline)", timing(copy, bytes, copy), true);
            double packMs = medianMs(stream, () -> kernels.gatherRows(src.at(0), index.at(packAt), dst.at(0), rowBytes,
                    rows, stream));
            row("pack kernel, prefill rank 0 (" + rows + " rows)", timing(packMs, bytes, copy), true);
            double unpackMs = medianMs(stream, () -> kernels.gatherRows(received.at(0), index.at(groupAt),
                    groupedRows.at(0), rowBytes, grouped, stream));
            long groupedBytes = (long) grouped * rowBytes;
            double copyGrouped = medianMs(stream, () -> CudaCheck.check(cudaMemcpyAsync(groupedCopy.at(0),
                    groupedRows.at(0), groupedBytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync(D2D)"));
            row("unpack kernel (group by expert), prefill rank 0 (" + grouped + " rows)",
                    timing(unpackMs, groupedBytes, copyGrouped), true);
            double sumMs = medianMs(stream, () -> kernels.accumulateBf16(dst.at(0), index.at(startAt),
                    index.at(returnedAt), sums.at(0), prefill.hidden(), prefill.tokens(), stream));
            row("combine sum at source, prefill rank 0", timing(sumMs, bytes, copy), true);
            long[] counts = {bytes};
            long[] step = {0};
            double ncclMs = medianMs(stream, () -> comm.allToAllVDevice(step[0]++, ExchangePhase.DISPATCH, dst, counts,
                    back, counts));
            row("NCCL send/recv to self, prefill rank 0 bytes", timing(ncclMs, bytes, copy), true);
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
        ByteBuffer routes = ByteBuffer.allocate(numRecv * plan.routeRowBytes()).order(ByteOrder.LITTLE_ENDIAN);
        int at = 0;
        for (int src = 0; src < w.worldSize(); src++) {
            int[] ids = BenchRouting.topkIds(w, src);
            float[] weights = new float[ids.length];
            Arrays.fill(weights, 1f / w.topK());
            DispatchLayout layout = new DispatchLayout(placement);
            layout.compute(ids, w.tokens(), w.topK());
            plan.writeRoutes(layout, 0, routes, at, ids, weights);
            at += rows[src][0] * plan.routeRowBytes();
        }
        plan.group(routes, numRecv);
        return plan;
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
        return String.format(Locale.ROOT, "%.3f ms, %.1f GB/s, %.2fx the copy's time (%.1f MB)", ms, bytes / ms / 1e6,
                ms / copyMs, bytes / 1e6);
    }

    private static double worstOfTolerance(float[] actual, float[] expected) {
        double worst = 0;
        for (int t = 0; t < TOKENS; t++) {
            double rowMax = 0;
            for (int c = 0; c < HIDDEN; c++) {
                rowMax = Math.max(rowMax, Math.abs(expected[t * HIDDEN + c]));
            }
            double tolerance = 0x1p-6 * rowMax + 1e-7;
            for (int c = 0; c < HIDDEN; c++) {
                worst = Math.max(worst, Math.abs(actual[t * HIDDEN + c] - expected[t * HIDDEN + c]) / tolerance);
            }
        }
        return worst;
    }

    private static ByteBuffer download(CudaMemory memory, long bytes) {
        ByteBuffer host = ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.LITTLE_ENDIAN);
        if (bytes > 0) {
            CudaCheck.check(cudaMemcpy(new BytePointer(host), memory.at(0), bytes, cudaMemcpyDeviceToHost),
                    "cudaMemcpy(device to host)");
        }
        return host;
    }

    private static float[] downloadFloats(CudaMemory memory, int n) {
        ByteBuffer host = download(memory, (long) n * Float.BYTES);
        float[] out = new float[n];
        host.asFloatBuffer().get(out);
        return out;
    }

    private void row(String check, String result, boolean ok) {
        table.add(new String[] {check, result, ok ? "ok" : "FAIL"});
        failed |= !ok;
        System.out.println((ok ? "ok   " : "FAIL ") + check + ": " + result);
    }

    private void print() {
        System.out.println();
        System.out.println("| check | result | status |");
        System.out.println("|---|---|---|");
        for (String[] r : table) {
            System.out.println("| " + r[0] + " | " + r[1] + " | " + r[2] + " |");
        }
    }

    /**
     * Waits for {@code stream}: it is non-blocking, so the synchronous copies (on the default
     * stream) do not wait for it by themselves.
     */
    private static void sync(CUstream_st stream) {
        CudaCheck.check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }
}
