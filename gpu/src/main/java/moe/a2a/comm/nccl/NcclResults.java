package moe.a2a.comm.nccl;

import static org.bytedeco.cuda.global.nccl.ncclInProgress;
import static org.bytedeco.cuda.global.nccl.ncclInternalError;
import static org.bytedeco.cuda.global.nccl.ncclInvalidArgument;
import static org.bytedeco.cuda.global.nccl.ncclInvalidUsage;
import static org.bytedeco.cuda.global.nccl.ncclRemoteError;
import static org.bytedeco.cuda.global.nccl.ncclSuccess;
import static org.bytedeco.cuda.global.nccl.ncclSystemError;
import static org.bytedeco.cuda.global.nccl.ncclUnhandledCudaError;

import moe.a2a.comm.A2aException;
import moe.a2a.comm.PeerFailedException;

/**
 * What an {@code ncclResult_t} means for a collective. The constants are compile-time constants of
 * the presets, inlined by javac: using them loads no native library, so this class works (and is
 * tested) on machines without NCCL.
 */
final class NcclResults {
    private NcclResults() {}

    /** The enum name of {@code result}, as NCCL's headers spell it. */
    static String name(int result) {
        return switch (result) {
            case ncclSuccess -> "ncclSuccess";
            case ncclUnhandledCudaError -> "ncclUnhandledCudaError";
            case ncclSystemError -> "ncclSystemError";
            case ncclInternalError -> "ncclInternalError";
            case ncclInvalidArgument -> "ncclInvalidArgument";
            case ncclInvalidUsage -> "ncclInvalidUsage";
            case ncclRemoteError -> "ncclRemoteError";
            case ncclInProgress -> "ncclInProgress";
            default -> "ncclResult(" + result + ")";
        };
    }

    /**
     * Neither success nor "still running" (what non-blocking communicators return while they work).
     */
    static boolean isError(int result) {
        return result != ncclSuccess && result != ncclInProgress;
    }

    /**
     * The exception a failed call surfaces as on {@code rank}: a remote error (a peer died or its
     * connection broke) is a {@link PeerFailedException}; anything else breaks the group as an
     * {@link A2aException}. {@code detail} is NCCL's last error text, or empty.
     */
    static A2aException failure(int result, String call, int rank, String detail) {
        String what =
                call
                        + " returned "
                        + name(result)
                        + " ("
                        + result
                        + ")"
                        + (detail.isEmpty() ? "" : ": " + detail);
        if (result == ncclRemoteError) {
            return new PeerFailedException(rank, new A2aException("nccl: " + what));
        }
        return new A2aException("nccl call failed on rank " + rank + ": " + what);
    }
}
