package moe.a2a.gpu;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.nccl.NcclCommunicator;

/**
 * The GPU machine check ({@code scripts/gpu-check.sh}): probe; dispatch + combine on the GPU at
 * world size 1 (NCCL send/recv to itself) against the CPU path ({@link GpuCpuComparison}); kernel
 * and NCCL timings ({@link GpuTimings}). Prints a table last; exits 0 when every check passed, 1
 * when one failed, 3 without a usable GPU.
 */
public final class GpuCheck {
    private GpuCheck() {}

    public static void main(String[] args) {
        Path cuda = null;
        Path nccl = null;
        int device = 0;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--cuda-lib-dir" -> cuda = Path.of(args[++i]);
                case "--nccl-lib-dir" -> nccl = Path.of(args[++i]);
                case "--device" -> device = Integer.parseInt(args[++i]);
                default -> {
                    System.err.println(
                            "usage: GpuCheck [--cuda-lib-dir DIR] [--nccl-lib-dir DIR] [--device N]");
                    System.exit(2);
                }
            }
        }
        System.exit(run(GpuLibraries.resolve(cuda, nccl), device));
    }

    static int run(GpuLibraries libraries, int device) {
        CheckTable table = new CheckTable();
        System.out.println("libraries: " + libraries.describe());
        GpuProbe.Result probe = GpuProbe.probe(libraries);
        table.row("probe", probe.describe(), probe.usable());
        if (!probe.usable()) {
            table.print();
            return 3;
        }
        try (NcclCommunicator comm =
                        NcclCommunicator.create(
                                NcclCommunicator.newUniqueId(),
                                0,
                                1,
                                device,
                                TimeUnit.SECONDS.toNanos(60));
                CudaKernels kernels = CudaKernels.load(device)) {
            System.out.println("kernels compiled for " + kernels.arch());
            GpuCpuComparison.run(comm, kernels, table);
            GpuTimings.run(comm, kernels, table);
        } catch (RuntimeException e) {
            e.printStackTrace(System.err);
            table.row("run", "failed: " + e, false);
        }
        table.print();
        return table.failed() ? 1 : 0;
    }
}
