package moe.a2a.cli;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import moe.a2a.comm.PlaneSettings;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportProvider;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import moe.a2a.gpu.GpuLibraries;
import moe.a2a.gpu.GpuProbe;
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
        PlaneSettings settings =
                new PlaneSettings(
                        "localhost",
                        0,
                        1,
                        null,
                        Path.of(WorkerCommand.DEFAULT_SHM_DIR),
                        0,
                        gpu.cudaLibDir,
                        gpu.ncclLibDir);
        OfferedTransports offer =
                OfferedTransports.survey(null, OfferedTransports.offerable(), settings);
        List<String> all = new ArrayList<>();
        for (TransportProvider p : Transports.all()) {
            if (p.reach() == TransportReach.THREADS) {
                all.add(p.transport() + " (serve)");
            }
        }
        String offered = Transport.labels(offer.transports());
        System.out.println(
                "transports: "
                        + String.join(", ", all)
                        + (offered.isEmpty() ? "" : ", " + offered)
                        + "; worker --transport auto offers "
                        + offered
                        + offer.missing());
        return 0;
    }
}
