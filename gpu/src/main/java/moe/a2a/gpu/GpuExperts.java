package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cublas.CUBLAS_COMPUTE_32F;
import static org.bytedeco.cuda.global.cublas.CUBLAS_GEMM_DEFAULT;
import static org.bytedeco.cuda.global.cublas.CUBLAS_OP_N;
import static org.bytedeco.cuda.global.cublas.CUBLAS_OP_T;
import static org.bytedeco.cuda.global.cublas.CUBLAS_STATUS_NOT_SUPPORTED;
import static org.bytedeco.cuda.global.cublas.CUBLAS_STATUS_SUCCESS;
import static org.bytedeco.cuda.global.cublas.cublasCreate_v2;
import static org.bytedeco.cuda.global.cublas.cublasDestroy_v2;
import static org.bytedeco.cuda.global.cublas.cublasGemmEx;
import static org.bytedeco.cuda.global.cublas.cublasGetStatusString;
import static org.bytedeco.cuda.global.cublas.cublasSetStream_v2;
import static org.bytedeco.cuda.global.cudart.CUDA_R_16BF;
import static org.bytedeco.cuda.global.cudart.CUDA_R_32F;
import static org.bytedeco.cuda.global.cudart.cudaMemcpy;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyHostToDevice;

import java.nio.FloatBuffer;
import java.util.IdentityHashMap;
import java.util.Map;
import moe.a2a.comm.A2aException;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ExpertWeights;
import moe.a2a.experts.WeightSource;
import moe.a2a.kernels.DType;
import org.bytedeco.cuda.cublas.cublasContext;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.ShortPointer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One rank's SwiGLU experts on the GPU: weights in bf16 device memory, each projection of every
 * local expert as one {@code cublasGemmGroupedBatchedEx} call ({@link GroupedGemms}: bf16 in, fp32
 * accumulate and out) and the activation as one kernel over all rows; where the loaded cuBLAS does
 * not support those types in a grouped call, three {@code cublasGemmEx} a slot. Row-major {@code
 * [n, H]} activations are column-major {@code [H, n]} to cuBLAS, so {@code X·Wᵀ} is one GEMM with
 * {@code W} transposed. Owned by one thread; runs on the stream passed to {@link #forward}.
 */
public final class GpuExperts implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(GpuExperts.class);

    private final cublasContext handle = new cublasContext();
    private final CudaKernels kernels;
    private final int hidden;
    private final int ffn;
    private final CudaMemory[] w1;
    private final CudaMemory[] w3;
    private final CudaMemory[] w2;
    private final long[] w1Addresses;
    private final long[] w3Addresses;
    private final long[] w2Addresses;
    private final FloatPointer one = new FloatPointer(1).put(1f);
    private final FloatPointer zero = new FloatPointer(1).put(0f);

    /** Whether the loaded cuBLAS runs the grouped calls (else a GEMM a slot). */
    private boolean grouped = true;

    private final Scratch scratch = new Scratch();

    /** Loads {@code layer}'s experts of {@code rank} under {@code placement}, by local slot. */
    public GpuExperts(
            WeightSource weights, int layer, Placement placement, int rank, CudaKernels kernels) {
        this(slots(weights, layer, placement, rank), weights.hidden(), weights.ffn(), kernels);
    }

    /**
     * Loads the experts {@code slots} holds, one a slot, each {@code [ffn, hidden]} (a layer's
     * shared expert alone, say, of its own width).
     */
    GpuExperts(ExpertWeights[] slots, int hidden, int ffn, CudaKernels kernels) {
        this.kernels = kernels;
        this.hidden = hidden;
        this.ffn = ffn;
        check(cublasCreate_v2(handle), "cublasCreate");
        int count = slots.length;
        w1 = new CudaMemory[count];
        w3 = new CudaMemory[count];
        w2 = new CudaMemory[count];
        for (int s = 0; s < count; s++) {
            ExpertWeights e = slots[s];
            w1[s] = upload(e.w1());
            w3[s] = upload(e.w3());
            w2[s] = upload(e.w2());
        }
        this.w1Addresses = addresses(w1);
        this.w3Addresses = addresses(w3);
        this.w2Addresses = addresses(w2);
    }

    /**
     * The device memory between the projections, and the grouped GEMMs' argument lists of each
     * layer that runs in it. A step captured as a CUDA graph keeps the addresses it was captured
     * with, so it brings its own, which nothing else grows, frees or rewrites.
     */
    public static final class Scratch implements AutoCloseable {
        private final CudaMemory gate = CudaMemory.device();
        private final CudaMemory up = CudaMemory.device();
        private final CudaMemory act = CudaMemory.device();
        private final Map<GpuExperts, GroupedGemms> calls = new IdentityHashMap<>();

        @Override
        public void close() {
            gate.close();
            up.close();
            act.close();
            for (GroupedGemms g : calls.values()) {
                g.close();
            }
        }
    }

    /**
     * {@code out[i] = W2 · (silu(W1·x_i) ⊙ (W3·x_i))} for the bf16 rows of {@code rows}, grouped by
     * slot ({@code rowsPerSlot[s]} rows of slot {@code s}, in order); {@code out} is fp32 {@code
     * [n, H]}.
     */
    public void forward(CudaMemory rows, int[] rowsPerSlot, CudaMemory out, CUstream_st stream) {
        forward(rows, rowsPerSlot, out, stream, scratch);
    }

    /**
     * As {@link #forward(CudaMemory, int[], CudaMemory, CUstream_st)}, in {@code scratch}: one
     * grouped GEMM call a projection for every slot with rows, and one activation over all rows.
     */
    public void forward(
            CudaMemory rows,
            int[] rowsPerSlot,
            CudaMemory out,
            CUstream_st stream,
            Scratch scratch) {
        long total = 0;
        for (int n : rowsPerSlot) {
            total += n;
        }
        if (total == 0) {
            return;
        }
        check(cublasSetStream_v2(handle, stream), "cublasSetStream");
        scratch.gate.ensure(total * ffn * Float.BYTES);
        scratch.up.ensure(total * ffn * Float.BYTES);
        scratch.act.ensure(total * ffn * Short.BYTES);
        if (grouped && grouped(rows, rowsPerSlot, out, stream, scratch, total)) {
            return;
        }
        long offset = 0;
        for (int s = 0; s < rowsPerSlot.length; s++) {
            int n = rowsPerSlot[s];
            if (n == 0) {
                continue;
            }
            BytePointer x = rows.at(offset * hidden * Short.BYTES);
            BytePointer gate = scratch.gate.at(offset * ffn * Float.BYTES);
            BytePointer up = scratch.up.at(offset * ffn * Float.BYTES);
            BytePointer act = scratch.act.at(offset * ffn * Short.BYTES);
            gemm(ffn, n, hidden, w1[s].at(0), x, gate);
            gemm(ffn, n, hidden, w3[s].at(0), x, up);
            kernels.siluMulBf16(gate, up, act, (long) n * ffn, stream);
            gemm(hidden, n, ffn, w2[s].at(0), act, out.at(offset * hidden * Float.BYTES));
            offset += n;
        }
    }

    /**
     * The three grouped calls; false, having run nothing, when the loaded cuBLAS does not support
     * them for these types, after which this layer runs a GEMM a slot.
     */
    private boolean grouped(
            CudaMemory rows,
            int[] rowsPerSlot,
            CudaMemory out,
            CUstream_st stream,
            Scratch scratch,
            long total) {
        GroupedGemms calls =
                scratch.calls.computeIfAbsent(this, e -> new GroupedGemms(hidden, ffn, w1.length));
        calls.plan(
                rowsPerSlot,
                w1Addresses,
                w3Addresses,
                w2Addresses,
                address(rows),
                address(scratch.gate),
                address(scratch.up),
                address(scratch.act),
                address(out));
        calls.upload(stream);
        int status = calls.run(handle, GroupedGemms.GATE);
        if (status == CUBLAS_STATUS_NOT_SUPPORTED) {
            grouped = false;
            LOG.info(
                    "cublasGemmGroupedBatchedEx does not support bf16 in, fp32 out here: experts"
                            + " run a GEMM a local expert");
            return false;
        }
        check(status, "cublasGemmGroupedBatchedEx(gate)");
        check(calls.run(handle, GroupedGemms.UP), "cublasGemmGroupedBatchedEx(up)");
        kernels.siluMulBf16(
                scratch.gate.at(0), scratch.up.at(0), scratch.act.at(0), total * ffn, stream);
        check(calls.run(handle, GroupedGemms.DOWN), "cublasGemmGroupedBatchedEx(down)");
        return true;
    }

    /** C[m, n] (column-major, fp32) = Wᵀ · B with W column-major [k, m] and B [k, n], both bf16. */
    private void gemm(int m, int n, int k, BytePointer w, BytePointer b, BytePointer c) {
        check(
                cublasGemmEx(
                        handle,
                        CUBLAS_OP_T,
                        CUBLAS_OP_N,
                        m,
                        n,
                        k,
                        one,
                        w,
                        CUDA_R_16BF,
                        k,
                        b,
                        CUDA_R_16BF,
                        k,
                        zero,
                        c,
                        CUDA_R_32F,
                        m,
                        CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT),
                "cublasGemmEx");
    }

    private static ExpertWeights[] slots(
            WeightSource weights, int layer, Placement placement, int rank) {
        ExpertWeights[] slots = new ExpertWeights[placement.localExperts(rank)];
        for (int s = 0; s < slots.length; s++) {
            slots[s] = weights.expert(layer, placement.expertAt(rank, s));
        }
        return slots;
    }

    private static long address(CudaMemory memory) {
        return memory.at(0).address();
    }

    private static long[] addresses(CudaMemory[] memory) {
        long[] out = new long[memory.length];
        for (int i = 0; i < memory.length; i++) {
            out[i] = address(memory[i]);
        }
        return out;
    }

    /** fp32 weights rounded to bf16 (as DType does) and copied to the device once. */
    private static CudaMemory upload(FloatBuffer weights) {
        int n = weights.capacity();
        ShortPointer host = new ShortPointer(n);
        for (int i = 0; i < n; i++) {
            host.put(i, DType.floatToBf16(weights.get(i)));
        }
        CudaMemory device = CudaMemory.device().ensure((long) n * Short.BYTES);
        CudaCheck.check(
                cudaMemcpy(device.at(0), host, (long) n * Short.BYTES, cudaMemcpyHostToDevice),
                "cudaMemcpy(weights)");
        host.close();
        return device;
    }

    private static void check(int status, String call) {
        if (status != CUBLAS_STATUS_SUCCESS) {
            throw new A2aException(
                    "cublas call failed: "
                            + call
                            + " returned "
                            + cublasGetStatusString(status).getString()
                            + " ("
                            + status
                            + ")");
        }
    }

    @Override
    public void close() {
        for (CudaMemory[] ws : new CudaMemory[][] {w1, w3, w2}) {
            for (CudaMemory w : ws) {
                w.close();
            }
        }
        scratch.close();
        cublasDestroy_v2(handle);
    }
}
