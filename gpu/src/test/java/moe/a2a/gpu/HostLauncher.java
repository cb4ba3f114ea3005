package moe.a2a.gpu;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.Pointer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Assumptions;

/**
 * {@code kernels.cu} compiled for the host by g++, CUDA's built-ins stood in for by {@code
 * cuda_host.h}, and launched as {@link CudaKernels} launches it on a device: its blocks one at a
 * time, each on {@link CudaKernels#THREADS} host threads. Device addresses are host addresses here,
 * so {@link CudaKernels} runs unchanged on host memory, and its grids, argument lists and the
 * kernels' own code are checked without a GPU. Compiled once a JVM; without g++ the tests using it
 * are skipped, unless {@code MOE_A2A_REQUIRE_GXX} is set (CI sets it).
 */
final class HostLauncher implements KernelLauncher {
    private static @Nullable HostLauncher compiled;

    /** What {@link KernelModule} looks up at load: a launch of anything else fails there too. */
    private static final List<String> KERNELS = KernelModule.kernels(KernelModule.source());

    private final SymbolLookup library;
    private final MethodHandle blockThreads;
    private final MethodHandle enter;

    private HostLauncher(SymbolLookup library) {
        this.library = library;
        this.blockThreads = function("host_block_threads", ValueLayout.JAVA_INT);
        this.enter =
                function(
                        "host_enter",
                        ValueLayout.JAVA_INT,
                        ValueLayout.JAVA_INT,
                        ValueLayout.JAVA_INT);
    }

    /** The kernels compiled for this JVM (the first call compiles them). */
    @SuppressWarnings("restricted") // the library is the one compiled just before
    static synchronized HostLauncher compiled() {
        if (compiled == null) {
            compiled = new HostLauncher(SymbolLookup.libraryLookup(compile(), Arena.global()));
        }
        return compiled;
    }

    @Override
    public String arch() {
        return "host (g++)";
    }

    @Override
    public void launch(String kernel, int blocks, @Nullable CUstream_st stream, Pointer... args) {
        if (!KERNELS.contains(kernel)) {
            throw new IllegalArgumentException("kernel: " + kernel + " (not in kernels.cu)");
        }
        List<Object> values = new ArrayList<>(args.length);
        MemoryLayout[] layouts = new MemoryLayout[args.length];
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case IntPointer p -> {
                    values.add(p.get());
                    layouts[i] = ValueLayout.JAVA_INT;
                }
                case LongPointer p -> {
                    // a pointer parameter takes a 64-bit address in the same register as a long
                    // long
                    values.add(p.get());
                    layouts[i] = ValueLayout.JAVA_LONG;
                }
                default ->
                        throw new IllegalArgumentException(
                                kernel + " argument " + i + ": " + args[i].getClass());
            }
        }
        MethodHandle function = function(kernel, layouts);
        run(
                blocks,
                (block, thread) -> {
                    enter.invoke(block, thread, CudaKernels.THREADS);
                    function.invokeWithArguments(values);
                });
    }

    /** The library stays loaded for the JVM: other tests launch on it. */
    @Override
    public void close() {}

    private interface ThreadBody {
        void run(int block, int thread) throws Throwable;
    }

    /**
     * Every block on the same {@link CudaKernels#THREADS} threads, each block after the last one's
     * threads all returned (its statics, the shared memory, are then free).
     */
    private void run(int blocks, ThreadBody body) {
        int threads = CudaKernels.THREADS;
        invoke(blockThreads, threads);
        CyclicBarrier blockDone = new CyclicBarrier(threads);
        AtomicReference<@Nullable Throwable> failure = new AtomicReference<>();
        List<Thread> started = new ArrayList<>(threads);
        for (int t = 0; t < threads; t++) {
            int thread = t;
            started.add(
                    Thread.ofPlatform()
                            .start(
                                    () -> {
                                        try {
                                            for (int b = 0; b < blocks; b++) {
                                                body.run(b, thread);
                                                blockDone.await(1, TimeUnit.MINUTES);
                                            }
                                        } catch (BrokenBarrierException e) {
                                            failure.compareAndSet(null, e);
                                        } catch (Throwable e) {
                                            failure.set(e);
                                            blockDone.reset();
                                        }
                                    }));
        }
        for (Thread t : started) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted in a launch", e);
            }
        }
        Throwable e = failure.get();
        if (e != null) {
            throw new AssertionError("host launch failed", e);
        }
    }

    @SuppressWarnings(
            "restricted") // each descriptor is the kernel's parameter list, from the launch
    private MethodHandle function(String name, MemoryLayout... args) {
        return Linker.nativeLinker()
                .downcallHandle(
                        library.find(name)
                                .orElseThrow(() -> new AssertionError("no kernel " + name)),
                        FunctionDescriptor.ofVoid(args));
    }

    private static void invoke(MethodHandle handle, int value) {
        try {
            handle.invoke(value);
        } catch (Throwable e) {
            throw new AssertionError(e);
        }
    }

    /** kernels.cu and cuda_host.h into a temporary folder, compiled there into a shared library. */
    private static Path compile() {
        try {
            Path dir = Files.createTempDirectory("moe-a2a-host-kernels");
            Files.writeString(dir.resolve("kernels.cu"), KernelModule.source());
            try (InputStream shim = HostLauncher.class.getResourceAsStream("cuda_host.h")) {
                if (shim == null) {
                    throw new IllegalStateException("cuda_host.h missing from the test classpath");
                }
                Files.write(dir.resolve("cuda_host.h"), shim.readAllBytes());
            }
            Path library = dir.resolve("libkernels.so");
            Process gxx;
            try {
                gxx =
                        new ProcessBuilder(
                                        "g++",
                                        "-std=c++17",
                                        "-O2",
                                        "-fPIC",
                                        "-shared",
                                        "-pthread",
                                        "-ffp-contract=off",
                                        "-fno-strict-aliasing",
                                        "-include",
                                        "cuda_host.h",
                                        "-x",
                                        "c++",
                                        "kernels.cu",
                                        "-o",
                                        library.toString())
                                .directory(dir.toFile())
                                .redirectErrorStream(true)
                                .start();
            } catch (IOException e) {
                if (System.getenv("MOE_A2A_REQUIRE_GXX") != null) {
                    throw new AssertionError("MOE_A2A_REQUIRE_GXX is set but g++ cannot run", e);
                }
                Assumptions.abort("no g++ to compile kernels.cu for the host: " + e.getMessage());
                throw new AssertionError(e);
            }
            String log = new String(gxx.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (gxx.waitFor() != 0) {
                throw new AssertionError("g++ could not compile kernels.cu for the host:\n" + log);
            }
            return library;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted compiling kernels.cu", e);
        }
    }
}
