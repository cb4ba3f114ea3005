package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cublas.CUBLAS_COMPUTE_32F;
import static org.bytedeco.cuda.global.cublas.CUBLAS_COMPUTE_32F_FAST_TF32;
import static org.bytedeco.cuda.global.cudart.CUDA_R_16BF;
import static org.bytedeco.cuda.global.cudart.CUDA_R_32F;

import moe.a2a.kernels.DType;

/**
 * How the experts' GEMMs compute on a GPU rank: bf16 rows and weights for a bf16 step, or fp32 rows
 * for fp16 and fp32 steps, on the weights widened from bf16 to fp32 (exactly), with fp32 math or,
 * only when asked for, TF32 tensor cores. Every kind accumulates in fp32 into fp32 outputs.
 */
enum ExpertMath {
    BF16(CUDA_R_16BF, CUBLAS_COMPUTE_32F),
    FP32(CUDA_R_32F, CUBLAS_COMPUTE_32F),
    TF32(CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32);

    /** cuBLAS's {@code cudaDataType} of the rows, weights and activations. */
    final int inputType;

    /** cuBLAS's {@code cublasComputeType_t}. */
    final int computeType;

    ExpertMath(int inputType, int computeType) {
        this.inputType = inputType;
        this.computeType = computeType;
    }

    /** The element type of the rows, weights and activations. */
    DType elements() {
        return this == BF16 ? DType.BF16 : DType.FP32;
    }

    /** Bytes of one element of the rows, weights and activations. */
    int inputBytes() {
        return elements().sizeBytes();
    }

    /**
     * The math of a step in {@code dtype}: bf16 GEMMs for bf16 tokens, fp32 ones (TF32 when {@code
     * tf32}) for the others.
     */
    static ExpertMath of(DType dtype, boolean tf32) {
        if (dtype == DType.BF16) {
            return BF16;
        }
        return tf32 ? TF32 : FP32;
    }
}
