package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cudart.cudaMemcpyAsync;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyHostToDevice;
import static org.bytedeco.cuda.global.cudart.cudaStreamSynchronize;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.ShortBuffer;
import java.util.Set;
import moe.a2a.experts.Fp8Matrix;
import moe.a2a.kernels.DType;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.ShortPointer;
import org.jspecify.annotations.Nullable;

/**
 * Copies an expert's projection to the device as a GPU rank holds it: fp32 weights rounded to bf16
 * (as {@link DType} rounds), or an FP8 checkpoint's codes and tile scales as stored. Each copy runs
 * in order on the stream when one is given (and is waited for there, as its pageable source is
 * freed on return), else synchronously. Stateless.
 */
final class ProjectionUploads {
    private ProjectionUploads() {}

    static CudaMemory bf16(FloatBuffer weights, @Nullable CUstream_st stream) {
        int n = weights.capacity();
        try (ShortPointer host = new ShortPointer(n)) {
            // through a buffer view: the pointer's own put is a native call an element
            ShortBuffer view = host.asBuffer();
            for (int i = 0; i < n; i++) {
                view.put(i, DType.floatToBf16(weights.get(i)));
            }
            return copy(host, (long) n * Short.BYTES, stream);
        }
    }

    /** The codes, then the scales at {@link #scalesAt}. */
    static CudaMemory fp8(Fp8Matrix weights, @Nullable CUstream_st stream) {
        long at = scalesAt(weights.rows(), weights.cols());
        long bytes = at + (long) weights.scales().length * Float.BYTES;
        try (BytePointer host = new BytePointer(bytes)) {
            ByteBuffer view = host.asBuffer().order(ByteOrder.LITTLE_ENDIAN);
            view.put(0, weights.codes(), 0, weights.rows() * weights.cols());
            for (int i = 0; i < weights.scales().length; i++) {
                view.putFloat((int) (at + (long) i * Float.BYTES), weights.scales()[i]);
            }
            return copy(host, bytes, stream);
        }
    }

    /** Frees the projections of {@code lists} (nulls skipped) that {@code kept} does not hold. */
    static void freeBut(Set<CudaMemory> kept, CudaMemory[]... lists) {
        for (CudaMemory[] list : lists) {
            for (CudaMemory w : list) {
                if (w != null && !kept.contains(w)) {
                    w.close();
                }
            }
        }
    }

    /** Where an FP8 projection's scales start: after its codes, 16-byte aligned. */
    static long scalesAt(int rows, int cols) {
        return ((long) rows * cols + 15) & ~15L;
    }

    private static CudaMemory copy(Pointer host, long bytes, @Nullable CUstream_st stream) {
        CudaMemory device = CudaMemory.device().ensure(bytes);
        try {
            if (stream == null) {
                device.upload(host, bytes, "weights");
            } else {
                CudaCheck.check(
                        cudaMemcpyAsync(device.at(0), host, bytes, cudaMemcpyHostToDevice, stream),
                        "cudaMemcpyAsync(weights)");
                CudaCheck.check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(weights)");
            }
        } catch (RuntimeException e) {
            CaptureTurns.free(stream != null, device::close);
            throw e;
        }
        return device;
    }
}
