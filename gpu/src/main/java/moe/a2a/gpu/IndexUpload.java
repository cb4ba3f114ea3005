package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cudart.cudaMemcpyAsync;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyHostToDevice;

import java.nio.ByteBuffer;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;

/**
 * The small per-step arrays the kernels read (pack order, grouping, combine's lists), gathered in
 * pinned memory and sent to the device in one copy. Each array is aligned to 16 bytes. Reused per
 * step; owned by one thread; the caller waits for the stream before the next {@link #reset}.
 */
final class IndexUpload implements AutoCloseable {
    private final CudaMemory host = CudaMemory.pinnedHost();
    private final CudaMemory device = CudaMemory.device();
    private long used;

    void reset(long capacityBytes) {
        host.ensure(capacityBytes);
        used = 0;
    }

    /** Appends {@code values[0, n)}; returns their byte offset. */
    long ints(int[] values, int n) {
        long at = reserve((long) n * Integer.BYTES);
        ByteBuffer b = host.hostView();
        for (int i = 0; i < n; i++) {
            b.putInt((int) (at + (long) i * Integer.BYTES), values[i]);
        }
        return at;
    }

    /** Appends {@code values[0, n)}; returns their byte offset. */
    long floats(float[] values, int n) {
        long at = reserve((long) n * Float.BYTES);
        ByteBuffer b = host.hostView();
        for (int i = 0; i < n; i++) {
            b.putFloat((int) (at + (long) i * Float.BYTES), values[i]);
        }
        return at;
    }

    /** Appends {@code values[0, n)} (device addresses, say); returns their byte offset. */
    long longs(long[] values, int n) {
        long at = reserve((long) n * Long.BYTES);
        ByteBuffer b = host.hostView();
        for (int i = 0; i < n; i++) {
            b.putLong((int) (at + (long) i * Long.BYTES), values[i]);
        }
        return at;
    }

    /** Copies everything appended to the device, in order on {@code stream}. */
    void upload(CUstream_st stream) {
        device.ensure(Math.max(used, 16));
        if (used > 0) {
            CudaCheck.check(
                    cudaMemcpyAsync(device.at(0), host.at(0), used, cudaMemcpyHostToDevice, stream),
                    "cudaMemcpyAsync(indexes)");
        }
    }

    /** The device address of the array at {@code offset}. */
    BytePointer at(long offset) {
        return device.at(offset);
    }

    /** The array of device pointers at {@code offset}, as cuBLAS's batched calls take it. */
    PointerPointer<Pointer> pointersAt(long offset) {
        return device.pointersAt(offset);
    }

    private long reserve(long bytes) {
        long at = (used + 15) & ~15L;
        if (at + bytes > host.capacity()) {
            throw new IllegalStateException(
                    "index upload of "
                            + (at + bytes)
                            + " bytes over its reserved "
                            + host.capacity());
        }
        used = at + bytes;
        return at;
    }

    @Override
    public void close() {
        host.close();
        device.close();
    }
}
