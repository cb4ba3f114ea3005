package moe.a2a.gpu;

import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.Pointer;
import org.jspecify.annotations.Nullable;

/**
 * Runs a kernel of {@code kernels.cu} by name: {@link KernelModule} through the CUDA driver; a test
 * runs the same source on the host instead, so {@link CudaKernels}' argument lists are checked
 * without a GPU.
 */
interface KernelLauncher extends AutoCloseable {
    /**
     * Launches {@code blocks} blocks of {@link CudaKernels#THREADS} threads of {@code kernel} on
     * {@code stream}.
     *
     * @param args one holder an argument, as cuLaunchKernel takes them: an {@code IntPointer} for
     *     an {@code int}, a {@code LongPointer} for a {@code long long} or a device address
     */
    void launch(String kernel, int blocks, @Nullable CUstream_st stream, Pointer... args);

    /** What runs the kernels: the architecture they were compiled for, e.g. {@code sm_90}. */
    String arch();

    @Override
    void close();
}
