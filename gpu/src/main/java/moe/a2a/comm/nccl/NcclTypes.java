package moe.a2a.comm.nccl;

import static org.bytedeco.cuda.global.nccl.ncclBfloat16;
import static org.bytedeco.cuda.global.nccl.ncclFloat16;
import static org.bytedeco.cuda.global.nccl.ncclFloat32;
import static org.bytedeco.cuda.global.nccl.ncclMax;
import static org.bytedeco.cuda.global.nccl.ncclMin;
import static org.bytedeco.cuda.global.nccl.ncclSum;

import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;

/**
 * The {@code ncclDataType_t} and {@code ncclRedOp_t} of the communicator's element types and
 * reductions. Compile-time constants of the presets, as in {@link NcclResults}: no native library
 * is loaded.
 */
final class NcclTypes {
    private NcclTypes() {}

    static int dataType(DType dtype) {
        return switch (dtype) {
            case FP32 -> ncclFloat32;
            case BF16 -> ncclBfloat16;
            case FP16 -> ncclFloat16;
        };
    }

    static int redOp(ReduceOp op) {
        return switch (op) {
            case SUM -> ncclSum;
            case MAX -> ncclMax;
            case MIN -> ncclMin;
        };
    }
}
