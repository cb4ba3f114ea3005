package moe.a2a.gpu;

import static moe.a2a.gpu.GpuCpuComparison.EXPERTS;
import static moe.a2a.gpu.GpuCpuComparison.FFN;
import static moe.a2a.gpu.GpuCpuComparison.HIDDEN;
import static moe.a2a.gpu.GpuCpuComparison.TOKENS;
import static moe.a2a.gpu.GpuCpuComparison.TOP_K;
import static org.bytedeco.cuda.global.cudart.cudaStreamCreateWithFlags;
import static org.bytedeco.cuda.global.cudart.cudaStreamDestroy;
import static org.bytedeco.cuda.global.cudart.cudaStreamNonBlocking;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Locale;
import java.util.SplittableRandom;
import moe.a2a.comm.nccl.NcclCommunicator;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ExpertWeights;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import org.bytedeco.cuda.cudart.CUstream_st;

/**
 * {@link GpuCheck}'s live rebalancing on the device, at world size 1: a layer's experts restaged
 * for a placement that reverses their slots (every expert kept: nothing may be uploaded), and
 * experts built without ids restaged for it (every expert uploaded on a stream of its own), each
 * serving the layer under the new placement against the scalar reference (bf16 tolerance), after
 * the experts they were restaged from are retired.
 */
final class RestagingCheck {
    private RestagingCheck() {}

    static void run(NcclCommunicator comm, CudaKernels kernels, CheckTable table) {
        Bf16Weights held = new Bf16Weights(new SeededWeights(7, EXPERTS, HIDDEN, FFN, 1));
        Placement first = Placement.contiguous(EXPERTS, 1);
        int[] reversed = new int[EXPERTS];
        double[][] shares = new double[1][EXPERTS];
        for (int s = 0; s < EXPERTS; s++) {
            reversed[s] = EXPERTS - 1 - s;
            shares[0][s] = 1.0;
        }
        Placement next = Placement.of(first.version() + 1, EXPERTS, new int[][] {reversed}, shares);
        ExpertWeights[] unnamed = new ExpertWeights[EXPERTS];
        for (int s = 0; s < EXPERTS; s++) {
            unnamed[s] = held.expert(0, s);
        }
        CUstream_st uploads = new CUstream_st();
        CudaCheck.check(
                cudaStreamCreateWithFlags(uploads, cudaStreamNonBlocking),
                "cudaStreamCreateWithFlags");
        try {
            // each restaging its own part: one that throws leaves the other's row
            GpuCheck.timed(
                    "RestagingCheck, every expert kept",
                    table,
                    () -> {
                        GpuExperts kept = new GpuExperts(held, 0, first, 0, false, kernels);
                        GpuExperts shared = kept.restaged(reversed, held, 0, uploads);
                        kept.retire(shared);
                        layer(comm, kernels, table, held, next, shared, "every expert kept", 0);
                    });
            GpuCheck.timed(
                    "RestagingCheck, every expert uploaded",
                    table,
                    () -> {
                        GpuExperts named = new GpuExperts(unnamed, HIDDEN, FFN, false, kernels);
                        GpuExperts uploaded = named.restaged(reversed, held, 0, uploads);
                        named.retire(uploaded);
                        layer(
                                comm,
                                kernels,
                                table,
                                held,
                                next,
                                uploaded,
                                "every expert uploaded",
                                3L * EXPERTS * HIDDEN * FFN * Short.BYTES);
                    });
        } finally {
            cudaStreamDestroy(uploads);
        }
    }

    /** The layer under {@code next} with {@code experts}; closes them. */
    private static void layer(
            NcclCommunicator comm,
            CudaKernels kernels,
            CheckTable table,
            Bf16Weights held,
            Placement next,
            GpuExperts experts,
            String what,
            long expectedUpload) {
        SplittableRandom random = new SplittableRandom(43);
        int rowBytes = HIDDEN * Short.BYTES;
        ByteBuffer tokens =
                ByteBuffer.allocateDirect(TOKENS * rowBytes).order(ByteOrder.LITTLE_ENDIAN);
        float[] x = new float[TOKENS * HIDDEN];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) random.nextDouble(-1, 1);
        }
        DType.BF16.encode(x, 0, x.length, tokens, 0);
        DType.BF16.decode(tokens, 0, x, 0, x.length);
        int[] ids = new int[TOKENS * TOP_K];
        float[] weights = new float[TOKENS * TOP_K];
        for (int t = 0; t < TOKENS; t++) {
            ids[t * TOP_K] = random.nextInt(EXPERTS);
            ids[t * TOP_K + 1] = (ids[t * TOP_K] + 1 + random.nextInt(EXPERTS - 1)) % EXPERTS;
            weights[t * TOP_K] = 0.6f;
            weights[t * TOP_K + 1] = 0.4f;
        }
        try (experts;
                CudaMemory deviceTokens = GpuCpuComparison.upload(tokens);
                CudaMemory expertOut = CudaMemory.device();
                CudaMemory out = CudaMemory.device();
                GpuExperts.Scratch scratch = new GpuExperts.Scratch();
                GpuDispatcher gpu =
                        new GpuDispatcher(
                                comm, Placement.contiguous(EXPERTS, 1), HIDDEN, TOP_K, kernels)) {
            gpu.use(next);
            CudaMemory grouped = gpu.dispatch(deviceTokens, TOKENS, DType.BF16, ids, weights);
            int groupedRows = Arrays.stream(gpu.rowsPerSlot()).sum();
            expertOut.ensure(Math.max(1, (long) groupedRows * HIDDEN * Float.BYTES));
            experts.forward(
                    grouped, DType.BF16, gpu.rowsPerSlot(), expertOut, comm.stream(), scratch);
            gpu.combine(expertOut, out);
            float[] layer = GpuCpuComparison.downloadFloats(out, TOKENS * HIDDEN);
            float[] reference =
                    new ReferenceMoeLayer(held).forward(0, x, TOKENS, TOP_K, ids, weights);
            double worst = GpuCpuComparison.worstOfTolerance(layer, reference);
            boolean uploadedRight = experts.loadedBytes() == expectedUpload;
            table.row(
                    "layer restaged for reversed slots (" + what + ") vs reference",
                    String.format(
                            Locale.ROOT,
                            "worst error %.2f of the bf16 tolerance, %d B uploaded (expected %d)",
                            worst,
                            experts.loadedBytes(),
                            expectedUpload),
                    worst <= 1 && uploadedRight);
        }
    }
}
