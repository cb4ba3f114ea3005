package moe.a2a.cli;

import java.util.concurrent.Callable;
import moe.a2a.comm.shm.ShmConfig;
import moe.a2a.gpu.GpuLibraries;
import moe.a2a.gpu.GpuProbe;
import moe.a2a.worker.ShmDataPlane;
import org.bytedeco.javacpp.Loader;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code moe-a2a doctor}: what this machine offers the data plane, and why not when it does not.
 */
@Command(
        name = "doctor",
        mixinStandardHelpOptions = true,
        description =
                "Print what this machine offers the data plane: Java, the CUDA/NCCL libraries found, the GPU probe.")
final class DoctorCommand implements Callable<Integer> {
    @Mixin GpuOptions gpu;

    @Override
    public Integer call() {
        GpuLibraries libraries = gpu.libraries();
        System.out.println(
                "java:       "
                        + System.getProperty("java.vm.name")
                        + " "
                        + Runtime.version()
                        + " on "
                        + Loader.getPlatform()
                        + ", "
                        + Runtime.getRuntime().availableProcessors()
                        + " cpus");
        System.out.println("libraries:  " + libraries.describe());
        GpuProbe.Result probe = GpuProbe.probe(libraries);
        System.out.println("gpu probe:  " + probe.describe());
        String shmUnusable = ShmDataPlane.unusable(ShmConfig.DEFAULT_DIRECTORY);
        String shm = shmUnusable == null ? ", shm" : "";
        System.out.println(
                "transports: local (serve), tcp"
                        + shm
                        + (probe.usable() ? ", nccl" : "")
                        + "; worker --transport auto offers tcp"
                        + shm
                        + (probe.usable() ? ", nccl" : "")
                        + (shmUnusable == null ? "" : " (no shm: " + shmUnusable + ")"));
        return 0;
    }
}
