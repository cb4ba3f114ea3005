package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cudart.cudaErrorMemoryAllocation;
import static org.bytedeco.cuda.global.cudart.cudaFree;
import static org.bytedeco.cuda.global.cudart.cudaFreeHost;
import static org.bytedeco.cuda.global.cudart.cudaMalloc;
import static org.bytedeco.cuda.global.cudart.cudaMallocHost;
import static org.bytedeco.cuda.global.cudart.cudaMemcpy;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyHostToDevice;
import static org.bytedeco.cuda.global.cudart.cudaStreamSynchronize;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;

/**
 * Device memory ({@code cudaMalloc}) or pinned host memory ({@code cudaMallocHost}) that grows to
 * the largest request and is then reused, so steps do not allocate. Growing discards the contents
 * and must not happen while the stream still uses the memory. Owned by one thread.
 */
public final class CudaMemory implements AutoCloseable {
    private final boolean host;
    private Pointer memory = new Pointer();
    private long capacity;
    private ByteBuffer view = ByteBuffer.allocate(0);

    private CudaMemory(boolean host) {
        this.host = host;
    }

    /** Device memory; nothing is allocated until {@link #ensure}. */
    public static CudaMemory device() {
        return new CudaMemory(false);
    }

    /** Pinned host memory, so copies to and from the device run asynchronously at full speed. */
    public static CudaMemory pinnedHost() {
        return new CudaMemory(true);
    }

    /**
     * At least {@code bytes} (doubling, so repeated growth stays rare, or exactly {@code bytes}
     * when double does not fit); returns this.
     */
    public CudaMemory ensure(long bytes) {
        if (bytes <= capacity) {
            return this;
        }
        long size = Math.max(bytes, capacity * 2);
        if (host) {
            // its ByteBuffer view addresses at most Integer.MAX_VALUE bytes
            if (bytes > Integer.MAX_VALUE) {
                throw new IllegalArgumentException(
                        "pinned host memory of "
                                + bytes
                                + " bytes (at most "
                                + Integer.MAX_VALUE
                                + ")");
            }
            size = Math.min(size, Integer.MAX_VALUE);
        }
        close();
        Pointer p = new Pointer();
        int error = allocate(p, size);
        if (error == cudaErrorMemoryAllocation && size > bytes) {
            // the doubled size did not fit; the request itself may
            size = bytes;
            error = allocate(p, size);
        }
        if (!host && error == cudaErrorMemoryAllocation) {
            throw new OutOfDeviceMemoryException("cudaMalloc(" + size + "): out of device memory");
        }
        CudaCheck.check(error, (host ? "cudaMallocHost(" : "cudaMalloc(") + size + ")");
        memory = p;
        capacity = size;
        if (host) {
            view =
                    new BytePointer(memory)
                            .capacity(capacity)
                            .asByteBuffer()
                            .order(ByteOrder.LITTLE_ENDIAN);
        }
        return this;
    }

    /**
     * Copies {@code bytes} of pageable host memory to the start of this device memory and waits
     * until they have landed: {@code cudaMemcpy} returns once a pageable source is staged, before
     * the last of its DMA ends, and kernels on a non-blocking stream do not wait for the legacy
     * stream that copy runs on.
     */
    public void upload(Pointer source, long bytes, String what) {
        CudaCheck.check(
                cudaMemcpy(at(0), source, bytes, cudaMemcpyHostToDevice),
                "cudaMemcpy(" + what + ")");
        CudaCheck.check(
                cudaStreamSynchronize(null), "cudaStreamSynchronize(legacy stream, " + what + ")");
    }

    private int allocate(Pointer p, long size) {
        return host ? cudaMallocHost(p, size) : cudaMalloc(p, size);
    }

    /** The address {@code offset} bytes in, for CUDA, cuBLAS and NCCL calls. */
    public BytePointer at(long offset) {
        return new BytePointer(memory).capacity(capacity).position(offset);
    }

    /**
     * The array of device pointers that starts {@code offset} bytes in, as cuBLAS's batched and
     * grouped calls take their A, B and C lists: their {@link PointerPointer} overloads pass the
     * array's address, while their {@link Pointer} overloads ({@code @ByPtrPtr}) would pass the
     * address of a host variable holding it.
     */
    public PointerPointer<Pointer> pointersAt(long offset) {
        return pointerArray(memory, offset);
    }

    /**
     * {@code base + offset} as a {@link PointerPointer}, whose position counts pointers, not bytes
     * ({@code base} at position 0: the cast keeps a position as it is).
     */
    static PointerPointer<Pointer> pointerArray(Pointer base, long offset) {
        if (offset % Long.BYTES != 0) {
            throw new IllegalArgumentException(
                    "offset: " + offset + " (expected: a multiple of " + Long.BYTES + ")");
        }
        return new PointerPointer<Pointer>(base).position(offset / Long.BYTES);
    }

    /** Pinned host memory as a little-endian buffer over the whole capacity. */
    public ByteBuffer hostView() {
        if (!host) {
            throw new IllegalStateException("device memory has no host view");
        }
        return view;
    }

    public long capacity() {
        return capacity;
    }

    @Override
    public void close() {
        if (capacity > 0) {
            if (host) {
                cudaFreeHost(memory);
            } else {
                cudaFree(memory);
            }
            capacity = 0;
            memory = new Pointer();
            view = ByteBuffer.allocate(0);
        }
    }
}
