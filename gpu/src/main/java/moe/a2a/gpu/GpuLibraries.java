package moe.a2a.gpu;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Where the host's CUDA and NCCL libraries are: the JavaCPP presets carry only JNI wrappers. In
 * order: the {@code --cuda-lib-dir}/{@code --nccl-lib-dir} options, then the {@code
 * MOE_A2A_CUDA_LIB_DIR}/{@code MOE_A2A_NCCL_LIB_DIR} environment variables, then NVIDIA's Python
 * wheels ({@code nvidia-nccl-cu13}, {@code nvidia-cuda-runtime}, {@code nvidia-cublas}, {@code
 * nvidia-cuda-nvrtc}) under the usual site-packages folders. Directories that hold none of the
 * expected libraries are ignored. Immutable.
 *
 * @param cudaDirs folders holding {@code libcudart.so.13} (and cuBLAS, NVRTC)
 * @param ncclDirs folders holding {@code libnccl.so.2}
 * @param origin how they were found, for logs
 */
public record GpuLibraries(List<Path> cudaDirs, List<Path> ncclDirs, String origin) {
    public static final String CUDA_ENV = "MOE_A2A_CUDA_LIB_DIR";
    public static final String NCCL_ENV = "MOE_A2A_NCCL_LIB_DIR";
    static final String CUDART = "libcudart.so.13";
    static final String NCCL = "libnccl.so.2";

    /** Where NVIDIA's CUDA 13 wheels put their libraries, relative to site-packages. */
    private static final List<String> CUDA_WHEEL_DIRS =
            List.of(
                    "nvidia/cu13/lib",
                    "nvidia/cuda_runtime/lib",
                    "nvidia/cublas/lib",
                    "nvidia/cuda_nvrtc/lib");

    private static final String NCCL_WHEEL_DIR = "nvidia/nccl/lib";
    private static final String PRELOAD_PATH = "org.bytedeco.javacpp.platform.preloadpath";

    public GpuLibraries {
        cudaDirs = List.copyOf(cudaDirs);
        ncclDirs = List.copyOf(ncclDirs);
    }

    /**
     * Resolves from the options (null when not given), this process's environment and the usual
     * site-packages.
     */
    public static GpuLibraries resolve(@Nullable Path cudaLibDir, @Nullable Path ncclLibDir) {
        return resolve(cudaLibDir, ncclLibDir, System.getenv(), sitePackages(System.getenv()));
    }

    static GpuLibraries resolve(
            @Nullable Path cudaLibDir,
            @Nullable Path ncclLibDir,
            Map<String, String> env,
            List<Path> sitePackages) {
        List<String> origin = new ArrayList<>();
        List<Path> cuda = explicit(cudaLibDir, env.get(CUDA_ENV), "cuda", origin);
        List<Path> nccl = explicit(ncclLibDir, env.get(NCCL_ENV), "nccl", origin);
        if (cuda.isEmpty()) {
            for (Path site : sitePackages) {
                for (String dir : CUDA_WHEEL_DIRS) {
                    Path candidate = site.resolve(dir);
                    if (Files.isDirectory(candidate) && holdsSharedLibrary(candidate)) {
                        cuda.add(candidate);
                    }
                }
            }
            if (!cuda.isEmpty()) {
                origin.add("cuda from wheels");
            }
        }
        if (nccl.isEmpty()) {
            for (Path site : sitePackages) {
                Path candidate = site.resolve(NCCL_WHEEL_DIR);
                if (Files.isRegularFile(candidate.resolve(NCCL))) {
                    nccl.add(candidate);
                    break;
                }
            }
            if (!nccl.isEmpty()) {
                origin.add("nccl from wheels");
            }
        }
        return new GpuLibraries(
                cuda, nccl, origin.isEmpty() ? "system default paths" : String.join(", ", origin));
    }

    /**
     * Points JavaCPP at these folders. Call before the first CUDA or NCCL class loads: a failed
     * load cannot be retried in the same JVM.
     */
    public void apply() {
        Set<String> dirs = new LinkedHashSet<>();
        String existing = System.getProperty(PRELOAD_PATH);
        if (existing != null && !existing.isEmpty()) {
            dirs.addAll(List.of(existing.split(java.io.File.pathSeparator)));
        }
        for (Path p : ncclDirs) {
            dirs.add(p.toString());
        }
        for (Path p : cudaDirs) {
            dirs.add(p.toString());
        }
        if (!dirs.isEmpty()) {
            System.setProperty(PRELOAD_PATH, String.join(java.io.File.pathSeparator, dirs));
        }
    }

    /** One line for logs: the folders and how they were found. */
    public String describe() {
        return "cuda="
                + (cudaDirs.isEmpty() ? "(system)" : cudaDirs)
                + " nccl="
                + (ncclDirs.isEmpty() ? "(system)" : ncclDirs)
                + " ["
                + origin
                + "]";
    }

    private static List<Path> explicit(
            @Nullable Path option, @Nullable String envValue, String what, List<String> origin) {
        List<Path> out = new ArrayList<>();
        if (option != null) {
            requireDirectory(option, "--" + what + "-lib-dir");
            out.add(option);
            origin.add(what + " from --" + what + "-lib-dir");
        } else if (envValue != null && !envValue.isBlank()) {
            Path p = Path.of(envValue);
            requireDirectory(p, what.equals("cuda") ? CUDA_ENV : NCCL_ENV);
            out.add(p);
            origin.add(what + " from " + (what.equals("cuda") ? CUDA_ENV : NCCL_ENV));
        }
        return out;
    }

    private static void requireDirectory(Path dir, String field) {
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException(
                    field
                            + ": "
                            + dir
                            + " (expected: a directory holding the "
                            + (field.contains("nccl") || field.contains("NCCL") ? NCCL : CUDART)
                            + " library)");
        }
    }

    private static boolean holdsSharedLibrary(Path dir) {
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "lib*.so*")) {
            return files.iterator().hasNext();
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * site-packages and dist-packages folders of the active virtualenv, the user and the system.
     */
    static List<Path> sitePackages(Map<String, String> env) {
        List<Path> roots = new ArrayList<>();
        String venv = env.get("VIRTUAL_ENV");
        if (venv != null) {
            roots.add(Path.of(venv, "lib"));
        }
        String conda = env.get("CONDA_PREFIX");
        if (conda != null) {
            roots.add(Path.of(conda, "lib"));
        }
        String home = env.get("HOME");
        if (home != null) {
            roots.add(Path.of(home, ".local", "lib"));
        }
        roots.add(Path.of("/usr/local/lib"));
        roots.add(Path.of("/usr/lib"));
        roots.add(Path.of("/opt/conda/lib"));
        List<Path> out = new ArrayList<>();
        for (Path root : roots) {
            try (DirectoryStream<Path> pythons = Files.newDirectoryStream(root, "python3*")) {
                for (Path python : pythons) {
                    for (String name : List.of("site-packages", "dist-packages")) {
                        Path site = python.resolve(name);
                        if (Files.isDirectory(site)) {
                            out.add(site);
                        }
                    }
                }
            } catch (IOException e) {
                // no such root on this machine
            }
        }
        return out;
    }
}
