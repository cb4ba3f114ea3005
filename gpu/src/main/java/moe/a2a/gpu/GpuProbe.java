package moe.a2a.gpu;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import org.bytedeco.cuda.global.cublas;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.cuda.global.nccl;
import org.bytedeco.cuda.global.nvrtc;
import org.bytedeco.javacpp.Loader;
import org.jspecify.annotations.Nullable;

/**
 * Whether this machine can run the NCCL data plane: does cudart load, how many devices are there,
 * does libnccl load and which version is it, do NVRTC and cuBLAS load — and, when not, why, in one
 * line. Never crashes the JVM: it only calls functions every CUDA 13.0 runtime and every supported
 * NCCL has, and catches failed loads. Without {@code /dev/nvidiactl} (no NVIDIA driver) it answers
 * in a few milliseconds at most (1–3 ms measured) without extracting any native library.
 *
 * <p>A failed load cannot be retried in the same JVM, so the first answer is kept.
 */
public final class GpuProbe {
    /**
     * The oldest NCCL the transport uses: ncclCommGetAsyncError, ncclCommFinalize,
     * ncclGetLastError.
     */
    public static final int MIN_NCCL_VERSION = 21400;

    static final Path DRIVER_NODE = Path.of("/dev/nvidiactl");

    /**
     * @param cudaLoaded cudart loaded
     * @param devices CUDA devices, 0 when none or unknown
     * @param ncclLoaded libnccl loaded
     * @param ncclVersion {@code ncclGetVersion}, e.g. 22903 for 2.29.3; 0 when unknown
     * @param reason why the NCCL transport cannot run here, or empty when it can
     * @param tookNanos how long the probe took
     */
    public record Result(
            boolean cudaLoaded,
            int devices,
            boolean ncclLoaded,
            int ncclVersion,
            String reason,
            long tookNanos) {
        /** Whether {@code --transport nccl} can run here. */
        public boolean usable() {
            return reason.isEmpty();
        }

        /** One line: what was found, or why not. */
        public String describe() {
            String took = String.format(Locale.ROOT, "%.1f ms", tookNanos / 1e6);
            if (usable()) {
                return "GPU: "
                        + devices
                        + " CUDA device(s), NCCL "
                        + versionString(ncclVersion)
                        + " (probe "
                        + took
                        + ")";
            }
            return "no GPU data plane: "
                    + reason
                    + " (cudart "
                    + (cudaLoaded ? "loaded" : "not loaded")
                    + ", devices "
                    + devices
                    + ", nccl "
                    + (ncclLoaded ? versionString(ncclVersion) : "not loaded")
                    + "; probe "
                    + took
                    + ")";
        }
    }

    private static @Nullable Result cached;

    private GpuProbe() {}

    /**
     * Probes once per JVM with {@code libraries} (applied before loading); later calls return the
     * first answer.
     */
    public static synchronized Result probe(GpuLibraries libraries) {
        if (cached == null) {
            cached = probe(libraries, DRIVER_NODE);
        }
        return cached;
    }

    /** The probe itself; {@code driverNode} is the device node whose absence means "no driver". */
    static Result probe(GpuLibraries libraries, Path driverNode) {
        long start = System.nanoTime();
        if (!Files.exists(driverNode)) {
            return new Result(
                    false,
                    0,
                    false,
                    0,
                    driverNode + " does not exist (no NVIDIA driver)",
                    System.nanoTime() - start);
        }
        libraries.apply();
        try {
            Loader.load(cudart.class);
        } catch (Throwable t) {
            return new Result(
                    false,
                    0,
                    false,
                    0,
                    "cudart did not load: " + rootMessage(t) + " (" + libraries.describe() + ")",
                    System.nanoTime() - start);
        }
        int[] count = new int[1];
        int error = cudart.cudaGetDeviceCount(count);
        if (error != cudart.cudaSuccess) {
            return new Result(
                    true,
                    0,
                    false,
                    0,
                    "cudaGetDeviceCount: "
                            + cudart.cudaGetErrorString(error).getString()
                            + " ("
                            + error
                            + ")",
                    System.nanoTime() - start);
        }
        if (count[0] == 0) {
            return new Result(true, 0, false, 0, "no CUDA device", System.nanoTime() - start);
        }
        try {
            Loader.load(nccl.class);
        } catch (Throwable t) {
            return new Result(
                    true,
                    count[0],
                    false,
                    0,
                    "libnccl did not load: " + rootMessage(t) + " (" + libraries.describe() + ")",
                    System.nanoTime() - start);
        }
        int[] version = new int[1];
        int result = nccl.ncclGetVersion(version);
        if (result != nccl.ncclSuccess) {
            return new Result(
                    true,
                    count[0],
                    true,
                    0,
                    "ncclGetVersion returned " + result,
                    System.nanoTime() - start);
        }
        if (version[0] < MIN_NCCL_VERSION) {
            return new Result(
                    true,
                    count[0],
                    true,
                    version[0],
                    "NCCL "
                            + versionString(version[0])
                            + " is older than "
                            + versionString(MIN_NCCL_VERSION),
                    System.nanoTime() - start);
        }
        // A GPU rank also compiles its kernels (NVRTC) and runs its experts (cuBLAS).
        for (Class<?> library : new Class<?>[] {nvrtc.class, cublas.class}) {
            try {
                Loader.load(library);
            } catch (Throwable t) {
                return new Result(
                        true,
                        count[0],
                        true,
                        version[0],
                        library.getSimpleName()
                                + " did not load: "
                                + rootMessage(t)
                                + " ("
                                + libraries.describe()
                                + ")",
                        System.nanoTime() - start);
            }
        }
        return new Result(true, count[0], true, version[0], "", System.nanoTime() - start);
    }

    /** 22903 → "2.29.3" (NCCL_VERSION_CODE since 2.9: major*10000 + minor*100 + patch). */
    public static String versionString(int code) {
        return code / 10000 + "." + (code / 100) % 100 + "." + code % 100;
    }

    private static String rootMessage(Throwable t) {
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root.getClass().getSimpleName() + ": " + root.getMessage();
    }
}
