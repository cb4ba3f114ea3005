package moe.a2a.cli;

import java.nio.file.Path;
import moe.a2a.gpu.GpuLibraries;
import moe.a2a.gpu.GpuProbe;
import picocli.CommandLine.Option;

/** Where the CUDA and NCCL libraries are, for the commands that probe or use the GPU. */
final class GpuOptions {
    @Option(
            names = "--cuda-lib-dir",
            paramLabel = "DIR",
            description =
                    "Folder with libcudart.so.13 (default: $"
                            + GpuLibraries.CUDA_ENV
                            + ", else NVIDIA's Python wheels, else the system's).")
    Path cudaLibDir;

    @Option(
            names = "--nccl-lib-dir",
            paramLabel = "DIR",
            description =
                    "Folder with libnccl.so.2 (default: $"
                            + GpuLibraries.NCCL_ENV
                            + ", else the nvidia-nccl-cu13 wheel, else the system's).")
    Path ncclLibDir;

    GpuLibraries libraries() {
        return GpuLibraries.resolve(cudaLibDir, ncclLibDir);
    }

    GpuProbe.Result probe() {
        return GpuProbe.probe(libraries());
    }
}
