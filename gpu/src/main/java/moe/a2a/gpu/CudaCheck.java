package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cudart.cudaGetErrorString;
import static org.bytedeco.cuda.global.cudart.cudaSuccess;

import moe.a2a.comm.A2aException;

/** Turns a CUDA runtime error code into an exception naming the call. Needs cudart loaded. */
public final class CudaCheck {
    private CudaCheck() {}

    /** Returns if {@code error} is {@code cudaSuccess}; throws naming {@code call} otherwise. */
    public static void check(int error, String call) {
        if (error != cudaSuccess) {
            throw new A2aException(
                    "cuda call failed: "
                            + call
                            + " returned "
                            + cudaGetErrorString(error).getString()
                            + " ("
                            + error
                            + ")");
        }
    }
}
