package moe.a2a.gpu;

import static moe.a2a.gpu.GpuCpuComparison.EXPERTS;
import static moe.a2a.gpu.GpuCpuComparison.FFN;
import static moe.a2a.gpu.GpuCpuComparison.HIDDEN;
import static moe.a2a.gpu.GpuCpuComparison.TOKENS;
import static moe.a2a.gpu.GpuCpuComparison.TOP_K;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Locale;
import moe.a2a.comm.nccl.NcclCommunicator;
import moe.a2a.dispatch.Dispatcher;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;

/**
 * {@link GpuCheck}'s fp16 and fp32 steps on the device, at world size 1, on {@link
 * GpuCpuComparison}'s tokens and routing: the rows NCCL moved and combine with identity experts
 * against the CPU {@link Dispatcher} (bit-exact expected), and the layer with fp32 cuBLAS GEMMs on
 * the bf16 weights a GPU rank holds against the scalar reference on those weights (within 2^-9 of
 * each row's largest magnitude for fp16, whose combine rows are rounded to fp16, and 2^-14 for
 * fp32, where only the summation orders differ).
 */
final class GpuDTypeComparison {
    private GpuDTypeComparison() {}

    static void run(
            NcclCommunicator comm,
            CudaKernels kernels,
            CheckTable table,
            float[] x,
            int[] ids,
            float[] weights,
            Placement placement) {
        check(comm, kernels, table, x, ids, weights, placement, DType.FP16, 0x1p-9);
        check(comm, kernels, table, x, ids, weights, placement, DType.FP32, 0x1p-14);
    }

    private static void check(
            NcclCommunicator comm,
            CudaKernels kernels,
            CheckTable table,
            float[] x,
            int[] ids,
            float[] weights,
            Placement placement,
            DType dtype,
            double tolerance) {
        int rowBytes = HIDDEN * dtype.sizeBytes();
        ByteBuffer tokens =
                ByteBuffer.allocateDirect(TOKENS * rowBytes).order(ByteOrder.LITTLE_ENDIAN);
        dtype.encode(x, 0, x.length, tokens, 0);
        float[] rounded = new float[x.length];
        dtype.decode(tokens, 0, rounded, 0, x.length);

        CpuIdentityLayer cpu =
                CpuIdentityLayer.run(tokens, TOKENS, HIDDEN, dtype, ids, weights, TOP_K, placement);

        Bf16Weights held = new Bf16Weights(new SeededWeights(7, EXPERTS, HIDDEN, FFN, 1));
        String name = dtype.name().toLowerCase(Locale.ROOT);
        try (CudaMemory deviceTokens = GpuCpuComparison.upload(tokens);
                CudaMemory expertOut = CudaMemory.device();
                CudaMemory out = CudaMemory.device();
                GpuDispatcher gpu = new GpuDispatcher(comm, placement, HIDDEN, TOP_K, kernels);
                GpuExperts experts = new GpuExperts(held, 0, placement, 0, false, kernels);
                GpuExperts.Scratch scratch = new GpuExperts.Scratch()) {
            CudaMemory grouped = gpu.dispatch(deviceTokens, TOKENS, dtype, ids, weights);
            GpuCpuComparison.sync(comm.stream());
            ByteBuffer gpuRecv =
                    GpuCpuComparison.download(gpu.received(), (long) gpu.numReceived() * rowBytes);
            boolean exact = gpu.numReceived() == cpu.rows() && gpuRecv.equals(cpu.received());
            table.row(
                    name + " dispatch rows vs CPU",
                    (exact ? "bit-exact" : "DIFFERENT")
                            + ", "
                            + cpu.rows()
                            + " rows of "
                            + rowBytes
                            + " B",
                    exact);

            // the grouped rows are fp32: as they are, they are the identity experts' outputs
            gpu.combine(grouped, out);
            float[] identityOut = GpuCpuComparison.downloadFloats(out, TOKENS * HIDDEN);
            long differing = cpu.differing(identityOut);
            table.row(
                    name + " combine, identity experts, vs CPU",
                    differing == 0
                            ? "bit-exact"
                            : differing + " of " + identityOut.length + " values differ",
                    differing == 0);

            int groupedRows = Arrays.stream(gpu.rowsPerSlot()).sum();
            expertOut.ensure(Math.max(1, (long) groupedRows * HIDDEN * Float.BYTES));
            experts.forward(
                    grouped, DType.FP32, gpu.rowsPerSlot(), expertOut, comm.stream(), scratch);
            gpu.combine(expertOut, out);
            float[] layer = GpuCpuComparison.downloadFloats(out, TOKENS * HIDDEN);
            float[] reference =
                    new ReferenceMoeLayer(held).forward(0, rounded, TOKENS, TOP_K, ids, weights);
            double worst = GpuCpuComparison.worstOfTolerance(layer, reference) * 0x1p-6 / tolerance;
            table.row(
                    "layer, " + name + " tokens, cuBLAS fp32 experts, vs reference",
                    String.format(
                            Locale.ROOT,
                            "worst error %.2f of the tolerance (%s of the row's max)",
                            worst,
                            tolerance == 0x1p-9 ? "2^-9" : "2^-14"),
                    worst <= 1);
        }
    }
}
