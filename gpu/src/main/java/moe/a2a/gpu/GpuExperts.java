package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cublas.CUBLAS_COMPUTE_32F;
import static org.bytedeco.cuda.global.cublas.CUBLAS_GEMM_DEFAULT;
import static org.bytedeco.cuda.global.cublas.CUBLAS_OP_N;
import static org.bytedeco.cuda.global.cublas.CUBLAS_OP_T;
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

/**
 * One rank's SwiGLU experts on the GPU: weights in bf16 device memory, the three projections as
 * {@code cublasGemmEx} (bf16 in, fp32 accumulate and out) and the activation as a kernel. Row-major
 * {@code [n, H]} activations are column-major {@code [H, n]} to cuBLAS, so {@code X·Wᵀ} is one GEMM
 * with {@code W} transposed. Owned by one thread; runs on the stream passed to {@link #forward}.
 */
public final class GpuExperts implements AutoCloseable {
    private final cublasContext handle = new cublasContext();
    private final CudaKernels kernels;
    private final int hidden;
    private final int ffn;
    private final CudaMemory[] w1;
    private final CudaMemory[] w3;
    private final CudaMemory[] w2;
    private final Scratch scratch = new Scratch();
    private final FloatPointer one = new FloatPointer(1).put(1f);
    private final FloatPointer zero = new FloatPointer(1).put(0f);

    /** Loads {@code layer}'s experts of {@code rank} under {@code placement}, by local slot. */
    public GpuExperts(
            WeightSource weights, int layer, Placement placement, int rank, CudaKernels kernels) {
        this.kernels = kernels;
        this.hidden = weights.hidden();
        this.ffn = weights.ffn();
        check(cublasCreate_v2(handle), "cublasCreate");
        int count = placement.localExperts(rank);
        w1 = new CudaMemory[count];
        w3 = new CudaMemory[count];
        w2 = new CudaMemory[count];
        for (int s = 0; s < count; s++) {
            ExpertWeights e = weights.expert(layer, placement.expertAt(rank, s));
            w1[s] = upload(e.w1());
            w3[s] = upload(e.w3());
            w2[s] = upload(e.w2());
        }
    }

    /**
     * The device memory between the projections. A step captured as a CUDA graph keeps the
     * addresses it was captured with, so it brings its own, which nothing else grows or frees.
     */
    public static final class Scratch implements AutoCloseable {
        private final CudaMemory gate = CudaMemory.device();
        private final CudaMemory up = CudaMemory.device();
        private final CudaMemory act = CudaMemory.device();

        @Override
        public void close() {
            gate.close();
            up.close();
            act.close();
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

    /** As {@link #forward(CudaMemory, int[], CudaMemory, CUstream_st)}, in {@code scratch}. */
    public void forward(
            CudaMemory rows,
            int[] rowsPerSlot,
            CudaMemory out,
            CUstream_st stream,
            Scratch scratch) {
        CudaMemory gate = scratch.gate;
        CudaMemory up = scratch.up;
        CudaMemory act = scratch.act;
        check(cublasSetStream_v2(handle, stream), "cublasSetStream");
        long offset = 0;
        for (int s = 0; s < rowsPerSlot.length; s++) {
            int n = rowsPerSlot[s];
            if (n == 0) {
                continue;
            }
            gate.ensure((long) n * ffn * Float.BYTES);
            up.ensure((long) n * ffn * Float.BYTES);
            act.ensure((long) n * ffn * Short.BYTES);
            BytePointer x = rows.at(offset * hidden * Short.BYTES);
            gemm(ffn, n, hidden, w1[s].at(0), x, gate.at(0));
            gemm(ffn, n, hidden, w3[s].at(0), x, up.at(0));
            kernels.siluMulBf16(gate.at(0), up.at(0), act.at(0), (long) n * ffn, stream);
            gemm(hidden, n, ffn, w2[s].at(0), act.at(0), out.at(offset * hidden * Float.BYTES));
            offset += n;
        }
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
