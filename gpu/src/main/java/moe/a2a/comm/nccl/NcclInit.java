package moe.a2a.comm.nccl;

import static org.bytedeco.cuda.global.cudart.cudaSetDevice;
import static org.bytedeco.cuda.global.nccl.NCCL_VERSION_CODE;
import static org.bytedeco.cuda.global.nccl.ncclCommInitRank;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.ExchangeTimeoutException;
import moe.a2a.gpu.CudaCheck;
import org.bytedeco.cuda.nccl.ncclComm;
import org.bytedeco.cuda.nccl.ncclConfig_t;
import org.bytedeco.cuda.nccl.ncclUniqueId;
import org.bytedeco.javacpp.BytePointer;

/**
 * The two ways {@link CudaNcclBackend} joins an NCCL group: non-blocking with a config, or blocking
 * on a guarded thread.
 */
final class NcclInit {
    /** {@code NCCL_CONFIG_UNDEF_INT}: "use NCCL's default" for every int field of ncclConfig_t. */
    private static final int UNDEF_INT = Integer.MIN_VALUE;

    private static final int CONFIG_MAGIC = 0xcafebeef;

    private NcclInit() {}

    /**
     * ncclConfig_t has no initializer macro in Java: every int field undefined, then non-blocking.
     */
    static ncclConfig_t nonBlockingConfig() {
        ncclConfig_t config = new ncclConfig_t();
        config.size(config.sizeof())
                .magic(CONFIG_MAGIC)
                .version(NCCL_VERSION_CODE)
                .blocking(0)
                .cgaClusterSize(UNDEF_INT)
                .minCTAs(UNDEF_INT)
                .maxCTAs(UNDEF_INT)
                .netName((BytePointer) null)
                .splitShare(UNDEF_INT)
                .trafficClass(UNDEF_INT)
                .commName((BytePointer) null)
                .collnetEnable(UNDEF_INT)
                .CTAPolicy(UNDEF_INT)
                // a shrunk child shares nothing with its parent, which is aborted after the shrink
                .shrinkShare(0)
                .nvlsCTAs(UNDEF_INT)
                .nChannelsPerNetPeer(UNDEF_INT)
                .nvlinkCentricSched(UNDEF_INT)
                .graphUsageMode(UNDEF_INT)
                .numRmaCtx(UNDEF_INT);
        return config;
    }

    /**
     * Before the non-blocking config's layout is known to the loaded NCCL, init blocks; it runs on
     * its own thread so a rank that never joins is a timeout here. That thread is then left behind
     * (NCCL offers no way to cancel it) while the worker's group epoch fails and a later one joins
     * afresh: one thread and its communicator leaked each time.
     */
    static void blocking(
            ncclComm comm, int size, ncclUniqueId uid, int rank, int device, long timeoutNs) {
        // The current device is per thread: the init thread must select the rank's device itself.
        CompletableFuture<Integer> init =
                CompletableFuture.supplyAsync(
                        () -> {
                            CudaCheck.check(cudaSetDevice(device), "cudaSetDevice(" + device + ")");
                            return ncclCommInitRank(comm, size, uid, rank);
                        },
                        r -> {
                            Thread t = new Thread(r, "moe-a2a-nccl-init");
                            t.setDaemon(true);
                            t.start();
                        });
        try {
            int result = init.get(timeoutNs, TimeUnit.NANOSECONDS);
            if (NcclResults.isError(result)) {
                throw NcclResults.failure(result, "ncclCommInitRank", rank, "");
            }
        } catch (TimeoutException e) {
            throw ExchangeTimeoutException.joining(rank, timeoutNs);
        } catch (ExecutionException e) {
            throw new A2aException(
                    "ncclCommInitRank failed on rank " + rank + ": " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new A2aException("interrupted in ncclCommInitRank on rank " + rank, e);
        }
    }
}
