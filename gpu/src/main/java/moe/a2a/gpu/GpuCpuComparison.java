package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cudart.cudaMemcpy;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyDeviceToHost;
import static org.bytedeco.cuda.global.cudart.cudaStreamSynchronize;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.function.Supplier;
import moe.a2a.comm.nccl.NcclCommunicator;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.Dispatcher;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.SeededWeights;
import moe.a2a.experts.SharedExpert;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.RowKernels;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.BytePointer;

/**
 * {@link GpuCheck}'s comparisons: dispatch and combine on the GPU against the CPU {@link
 * Dispatcher} on the same inputs (bit-exact expected), the layer with cuBLAS experts against the
 * scalar reference (bf16 tolerance), and FP8 dispatch against the CPU quantizer (bit-exact) and the
 * reference (FP8 tolerance).
 */
final class GpuCpuComparison {
    static final int TOKENS = 256;
    static final int HIDDEN = 512;
    static final int FFN = 1024;
    static final int EXPERTS = 8;
    static final int TOP_K = 2;

    private GpuCpuComparison() {}

    /**
     * The seeded bf16 tokens (and their values as floats) and their routing every part takes. Each
     * FP8 block of a token's channels has a magnitude of its own, from 2^-6 to 2^6, so that its
     * scale differs from its neighbours': a dequantize that took another block's scale would be off
     * by powers of two in some blocks, past FP8's tolerance.
     */
    private record Inputs(
            ByteBuffer tokens, float[] x, int[] ids, float[] weights, Placement placement) {
        static Inputs seeded() {
            SplittableRandom random = new SplittableRandom(42);
            int rowBytes = HIDDEN * Short.BYTES;
            ByteBuffer tokens =
                    ByteBuffer.allocateDirect(TOKENS * rowBytes).order(ByteOrder.LITTLE_ENDIAN);
            float[] x = new float[TOKENS * HIDDEN];
            double magnitude = 1;
            for (int i = 0; i < x.length; i++) {
                if (i % RowKernels.FP8_BLOCK == 0) {
                    magnitude = Math.scalb(1.0, random.nextInt(-6, 7));
                }
                short b = DType.floatToBf16((float) (magnitude * random.nextDouble(-1, 1)));
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
            return new Inputs(tokens, x, ids, weights, Placement.contiguous(EXPERTS, 1));
        }
    }

    /**
     * World size 1 on both paths, the same seeded tokens and routing. Each part (bf16, FP8
     * dispatch, fp16 and fp32) is a part of its own and takes the communicator from {@code world}
     * when it starts, so one that aborts its communicator leaves the next a fresh one.
     */
    static void run(Supplier<NcclCommunicator> world, CudaKernels kernels, CheckTable table) {
        Inputs in = Inputs.seeded();
        try (CudaMemory deviceTokens = upload(in.tokens())) {
            GpuCheck.timed(
                    "GpuCpuComparison, bf16",
                    table,
                    () -> bf16(world.get(), kernels, table, in, deviceTokens));
            GpuCheck.timed(
                    "GpuCpuComparison, FP8 dispatch",
                    table,
                    () -> fp8(world.get(), kernels, table, in, deviceTokens));
            GpuCheck.timed(
                    "GpuDTypeComparison",
                    table,
                    () ->
                            GpuDTypeComparison.run(
                                    world.get(),
                                    kernels,
                                    table,
                                    in.x(),
                                    in.ids(),
                                    in.weights(),
                                    in.placement()));
        }
    }

    /**
     * The bf16 step: the rows NCCL moved and combine with identity experts against the CPU path,
     * then the layer with cuBLAS experts, alone and with a gated shared expert, against the
     * reference.
     */
    private static void bf16(
            NcclCommunicator comm,
            CudaKernels kernels,
            CheckTable table,
            Inputs in,
            CudaMemory deviceTokens) {
        int rowBytes = HIDDEN * Short.BYTES;
        CpuIdentityLayer cpu =
                CpuIdentityLayer.run(
                        in.tokens(),
                        TOKENS,
                        HIDDEN,
                        DType.BF16,
                        in.ids(),
                        in.weights(),
                        TOP_K,
                        in.placement());

        // GPU path on the same inputs.
        CUstream_st stream = comm.stream();
        try (CudaMemory expertOut = CudaMemory.device();
                CudaMemory out = CudaMemory.device();
                GpuDispatcher gpu =
                        new GpuDispatcher(comm, in.placement(), HIDDEN, TOP_K, kernels);
                GpuExperts experts =
                        new GpuExperts(
                                new Bf16Weights(new SeededWeights(7, EXPERTS, HIDDEN, FFN, 1)),
                                0,
                                in.placement(),
                                0,
                                false,
                                kernels);
                GpuExperts.Scratch scratch = new GpuExperts.Scratch()) {
            CudaMemory grouped =
                    gpu.dispatch(deviceTokens, TOKENS, DType.BF16, in.ids(), in.weights());
            sync(stream);
            ByteBuffer gpuRecv = download(gpu.received(), (long) gpu.numReceived() * rowBytes);
            boolean exchangeExact =
                    gpu.numReceived() == cpu.rows() && gpuRecv.equals(cpu.received());
            table.row(
                    "dispatch rows vs CPU (world size 1)",
                    (exchangeExact ? "bit-exact" : "DIFFERENT")
                            + ", "
                            + cpu.rows()
                            + " rows of "
                            + rowBytes
                            + " B",
                    exchangeExact);

            int groupedRows = Arrays.stream(gpu.rowsPerSlot()).sum();
            expertOut.ensure((long) groupedRows * HIDDEN * Float.BYTES);
            kernels.bf16ToFp32(grouped.at(0), expertOut.at(0), (long) groupedRows * HIDDEN, stream);
            gpu.combine(expertOut, out);
            float[] gpuOut = downloadFloats(out, TOKENS * HIDDEN);
            long differing = cpu.differing(gpuOut);
            table.row(
                    "combine, identity experts, vs CPU",
                    differing == 0
                            ? "bit-exact"
                            : differing + " of " + gpuOut.length + " values differ",
                    differing == 0);

            // The layer with cuBLAS experts (same dispatch) against the scalar reference.
            experts.forward(grouped, DType.BF16, gpu.rowsPerSlot(), expertOut, stream, scratch);
            gpu.combine(expertOut, out);
            float[] layer = downloadFloats(out, TOKENS * HIDDEN);
            float[] reference =
                    new ReferenceMoeLayer(
                                    new Bf16Weights(new SeededWeights(7, EXPERTS, HIDDEN, FFN, 1)))
                            .forward(0, in.x(), TOKENS, TOP_K, in.ids(), in.weights());
            double worst = worstOfTolerance(layer, reference);
            table.row(
                    "layer, cuBLAS bf16 experts, vs reference",
                    String.format(
                            Locale.ROOT,
                            "worst error %.2f of the bf16 tolerance (2^-6 of the row's max)",
                            worst),
                    worst <= 1);
            // a part of its own: one that throws leaves the rows above
            GpuCheck.timed(
                    "GpuCpuComparison, gated shared expert",
                    table,
                    () ->
                            sharedExpert(
                                    comm,
                                    kernels,
                                    table,
                                    deviceTokens,
                                    out,
                                    in.x(),
                                    in.ids(),
                                    in.weights()));
        }
    }

    /**
     * A gated shared expert (Qwen2-MoE's kind) on its own stream, added into the routed layer's
     * output in {@code out}: the sum must stay within the bf16 tolerance of the reference layer
     * with that shared expert.
     */
    private static void sharedExpert(
            NcclCommunicator comm,
            CudaKernels kernels,
            CheckTable table,
            CudaMemory deviceTokens,
            CudaMemory out,
            float[] x,
            int[] ids,
            float[] weights) {
        SplittableRandom random = new SplittableRandom(8);
        float[] gate = new float[HIDDEN];
        for (int c = 0; c < HIDDEN; c++) {
            gate[c] = (float) random.nextDouble(-0.1, 0.1);
        }
        Bf16Weights withShared =
                new Bf16Weights(
                        new SeededWeights(7, EXPERTS, HIDDEN, FFN, 1),
                        new SharedExpert(
                                new SeededWeights(8, EXPERTS, HIDDEN, FFN, 1).expert(0, 0), gate));
        SharedExpert shared = withShared.sharedExpert(0);
        if (shared == null) {
            throw new IllegalStateException("the check's weights lost their shared expert");
        }
        try (GpuSharedExpert onDevice = new GpuSharedExpert(shared, false, kernels);
                GpuSharedExpert.Lane lane = new GpuSharedExpert.Lane()) {
            onDevice.start(lane, deviceTokens, TOKENS, DType.BF16, comm.stream());
            onDevice.addTo(lane, out, deviceTokens, TOKENS, DType.BF16, comm.stream());
            sync(comm.stream());
            float[] layer = downloadFloats(out, TOKENS * HIDDEN);
            float[] reference =
                    new ReferenceMoeLayer(withShared).forward(0, x, TOKENS, TOP_K, ids, weights);
            double worst = worstOfTolerance(layer, reference);
            table.row(
                    "layer with a gated shared expert (own stream) vs reference",
                    String.format(
                            Locale.ROOT,
                            "worst error %.2f of the bf16 tolerance (2^-6 of the row's max)",
                            worst),
                    worst <= 1);
        }
    }

    /**
     * FP8 dispatch at world size 1: the rows NCCL moved must be the CPU quantizer's FP8 rows of the
     * same tokens in the pack order, byte for byte; the layer with cuBLAS experts on the
     * dequantized rows must stay within FP8's tolerance of the reference.
     */
    private static void fp8(
            NcclCommunicator comm,
            CudaKernels kernels,
            CheckTable table,
            Inputs in,
            CudaMemory deviceTokens) {
        CUstream_st stream = comm.stream();
        Bf16Weights bf16 = new Bf16Weights(new SeededWeights(7, EXPERTS, HIDDEN, FFN, 1));
        try (CudaMemory expertOut = CudaMemory.device();
                CudaMemory out = CudaMemory.device();
                GpuDispatcher gpu =
                        new GpuDispatcher(
                                comm, in.placement(), HIDDEN, TOP_K, DispatchDType.FP8, kernels);
                GpuExperts experts = new GpuExperts(bf16, 0, in.placement(), 0, false, kernels);
                GpuExperts.Scratch scratch = new GpuExperts.Scratch()) {
            CudaMemory grouped =
                    gpu.dispatch(deviceTokens, TOKENS, DType.BF16, in.ids(), in.weights());
            sync(stream);
            int fp8Bytes = gpu.sentRowBytes();
            int rows = gpu.numReceived();
            ByteBuffer received = download(gpu.received(), (long) rows * fp8Bytes);
            ByteBuffer cpu =
                    ByteBuffer.allocateDirect(rows * fp8Bytes).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < rows; i++) {
                RowKernels.quantizeFp8FromBf16(
                        MemorySegment.ofBuffer(in.tokens()),
                        (long) gpu.layout().packOrder(i) * HIDDEN * Short.BYTES,
                        MemorySegment.ofBuffer(cpu),
                        (long) i * fp8Bytes,
                        HIDDEN);
            }
            boolean exact = received.equals(cpu);
            table.row(
                    "FP8 dispatch rows vs CPU quantizer",
                    (exact ? "bit-exact" : "DIFFERENT")
                            + ", "
                            + rows
                            + " rows of "
                            + fp8Bytes
                            + " B",
                    exact);
            int groupedRows = Arrays.stream(gpu.rowsPerSlot()).sum();
            expertOut.ensure((long) groupedRows * HIDDEN * Float.BYTES);
            experts.forward(grouped, DType.BF16, gpu.rowsPerSlot(), expertOut, stream, scratch);
            gpu.combine(expertOut, out);
            float[] layer = downloadFloats(out, TOKENS * HIDDEN);
            float[] reference =
                    new ReferenceMoeLayer(bf16)
                            .forward(0, in.x(), TOKENS, TOP_K, in.ids(), in.weights());
            // FP8 keeps 3 mantissa bits: 2^-3 of the row's largest magnitude, as the client checks
            double worst = worstOfTolerance(layer, reference) * 0x1p-6 / 0x1p-3;
            table.row(
                    "layer, FP8 dispatch, cuBLAS bf16 experts, vs reference",
                    String.format(
                            Locale.ROOT,
                            "worst error %.2f of the FP8 tolerance (2^-3 of the row's max)",
                            worst),
                    worst <= 1);
        }
    }

    /** The worst error of {@code actual} in units of 2^-6 of each row's largest magnitude. */
    static double worstOfTolerance(float[] actual, float[] expected) {
        return worstOfTolerance(actual, expected, TOKENS, HIDDEN);
    }

    /**
     * As {@link #worstOfTolerance(float[], float[])}, for {@code tokens} rows of {@code hidden}.
     */
    static double worstOfTolerance(float[] actual, float[] expected, int tokens, int hidden) {
        double worst = 0;
        for (int t = 0; t < tokens; t++) {
            double rowMax = 0;
            for (int c = 0; c < hidden; c++) {
                rowMax = Math.max(rowMax, Math.abs(expected[t * hidden + c]));
            }
            double tolerance = 0x1p-6 * rowMax + 1e-7;
            for (int c = 0; c < hidden; c++) {
                worst =
                        Math.max(
                                worst,
                                Math.abs(actual[t * hidden + c] - expected[t * hidden + c])
                                        / tolerance);
            }
        }
        return worst;
    }

    /** {@code host}'s bytes copied to new device memory. */
    static CudaMemory upload(ByteBuffer host) {
        CudaMemory device = CudaMemory.device().ensure(Math.max(1, host.capacity()));
        device.upload(new BytePointer(host), host.capacity(), "tokens");
        return device;
    }

    static ByteBuffer download(CudaMemory memory, long bytes) {
        ByteBuffer host = ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.LITTLE_ENDIAN);
        if (bytes > 0) {
            CudaCheck.check(
                    cudaMemcpy(new BytePointer(host), memory.at(0), bytes, cudaMemcpyDeviceToHost),
                    "cudaMemcpy(device to host)");
        }
        return host;
    }

    static float[] downloadFloats(CudaMemory memory, int n) {
        ByteBuffer host = download(memory, (long) n * Float.BYTES);
        float[] out = new float[n];
        host.asFloatBuffer().get(out);
        return out;
    }

    /**
     * Waits for {@code stream}: it is non-blocking, so the synchronous copies (on the default
     * stream) do not wait for it by themselves.
     */
    static void sync(CUstream_st stream) {
        CudaCheck.check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }
}
