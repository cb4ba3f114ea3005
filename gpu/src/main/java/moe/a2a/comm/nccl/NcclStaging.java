package moe.a2a.comm.nccl;

import static org.bytedeco.cuda.global.cudart.cudaMemcpyAsync;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyDeviceToHost;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyHostToDevice;
import static org.bytedeco.cuda.global.cudart.cudaSetDevice;

import java.nio.ByteBuffer;
import moe.a2a.gpu.CudaCheck;
import moe.a2a.gpu.CudaMemory;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.BytePointer;

/**
 * The staging of {@link CudaNcclBackend}'s calls from host memory: pinned host buffers the caller
 * fills and reads, device buffers NCCL sends from and receives into, all grown to the largest call
 * and reused; the copy to the device before a call, and the copy back once NCCL has enqueued its
 * kernels.
 *
 * <p>Used under the backend's lock, from the rank's thread or the watchdog's polls.
 */
final class NcclStaging {
    private final int device;
    private final CUstream_st stream;
    private final CudaMemory sendHost = CudaMemory.pinnedHost();
    private final CudaMemory recvHost = CudaMemory.pinnedHost();
    private final CudaMemory sendDevice = CudaMemory.device();
    private final CudaMemory recvDevice = CudaMemory.device();
    private long pendingCopyBack = -1;

    NcclStaging(int device, CUstream_st stream) {
        this.device = device;
        this.stream = stream;
    }

    ByteBuffer sendHost(long bytes) {
        selectDevice();
        return sendHost.ensure(bytes).hostView();
    }

    ByteBuffer recvHost(long bytes) {
        selectDevice();
        return recvHost.ensure(bytes).hostView();
    }

    /**
     * The rank's device, current on the calling thread before anything is allocated: pinned memory
     * taken on a thread without one would start a context on device 0.
     */
    private void selectDevice() {
        CudaCheck.check(cudaSetDevice(device), "cudaSetDevice(" + device + ")");
    }

    /** The device buffer NCCL sends from. */
    CudaMemory sendDevice() {
        return sendDevice;
    }

    /** The device buffer NCCL receives into. */
    CudaMemory recvDevice() {
        return recvDevice;
    }

    /** Where NCCL sends from, at offset 0. */
    BytePointer sendAt() {
        return sendDevice.at(0);
    }

    /** Where NCCL receives into, at offset 0. */
    BytePointer recvAt() {
        return recvDevice.at(0);
    }

    /**
     * Sizes the buffers for a call moving {@code sendBytes} out and {@code recvBytes} in, and
     * enqueues the copy of {@code sendBytes} of the send staging to the device.
     */
    void copyIn(long sendBytes, long recvBytes) {
        selectDevice();
        sendDevice.ensure(sendBytes);
        recvDevice.ensure(recvBytes);
        // the copy back lands here before the caller asks for recvStaging: size it now
        recvHost.ensure(recvBytes);
        if (sendBytes > 0) {
            CudaCheck.check(
                    cudaMemcpyAsync(
                            sendDevice.at(0),
                            sendHost.at(0),
                            sendBytes,
                            cudaMemcpyHostToDevice,
                            stream),
                    "cudaMemcpyAsync(host to device)");
        }
    }

    /**
     * Has {@code recvBytes} copied back by the next {@link #copyBack}: on a non-blocking
     * communicator the call may still be launching (ncclInProgress), and the copy back may only be
     * enqueued once NCCL has put its kernels on the stream.
     */
    void copyBackLater(long recvBytes) {
        pendingCopyBack = recvBytes;
    }

    /** Enqueues the copy back that {@link #copyBackLater} asked for, if any. */
    void copyBack() {
        if (pendingCopyBack >= 0) {
            if (pendingCopyBack > 0) {
                CudaCheck.check(
                        cudaMemcpyAsync(
                                recvHost.at(0),
                                recvDevice.at(0),
                                pendingCopyBack,
                                cudaMemcpyDeviceToHost,
                                stream),
                        "cudaMemcpyAsync(device to host)");
            }
            pendingCopyBack = -1;
        }
    }

    void close() {
        sendHost.close();
        recvHost.close();
        sendDevice.close();
        recvDevice.close();
    }
}
