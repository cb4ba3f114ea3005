package moe.a2a.gpu;

import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.nccl.NcclCommunicator;
import moe.a2a.comm.nccl.NcclUniqueId;

/**
 * The GPU machine check ({@code scripts/gpu-check.sh}): probe; dispatch + combine on the GPU at
 * world size 1 (NCCL send/recv to itself) against the CPU path ({@link GpuCpuComparison}); layers
 * restaged for another placement ({@link RestagingCheck}); experts held in FP8 against bf16 ({@link
 * Fp8HeldCheck}); the low-latency step captured as a CUDA graph against the same step enqueued
 * ({@link LowLatencyGraphCheck}); kernel and NCCL timings ({@link GpuTimings}); a served step's
 * stages ({@link ServedStepTiming}); NCCL's collectives against a reference ({@link
 * NcclCollectivesCheck}) at world size 1 and, with two or more GPUs, across them; then the checks
 * passed in. A check that throws is a failed row, and the others still run. Prints each check's
 * time as it ends, a table last, and the total; exits 0 when every check passed, 1 when one failed,
 * 3 without a usable GPU.
 */
public final class GpuCheck {
    /**
     * The world-size-1 communicator's timeout, for its init and each exchange: the checks' steps
     * take milliseconds, and each check that wedges spends this much of the device's budget.
     */
    private static final long TIMEOUT_NS = TimeUnit.SECONDS.toNanos(20);

    /** The most GPUs the multi-GPU collectives check puts in one group. */
    private static final int MAX_RANKS = 8;

    private GpuCheck() {}

    /** A check run after GpuCheck's own, on the same device and table. */
    public interface DeviceCheck {
        void run(int device, CheckTable table);
    }

    public static void main(String[] args) {
        System.exit(run(args, List.of()));
    }

    /**
     * Parses {@code args} and runs every check, then {@code more}; returns the exit code (2 for bad
     * arguments).
     */
    public static int run(String[] args, List<DeviceCheck> more) {
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
                    return 2;
                }
            }
        }
        return run(GpuLibraries.resolve(cuda, nccl), device, more);
    }

    /**
     * Runs {@code check} and prints how long it took, so a run shows where its time goes. A check
     * that throws is a failed row and the next one still runs: a first run on a new machine shows
     * every check's outcome, not only the first failure's.
     */
    static void timed(String check, CheckTable table, Runnable run) {
        long start = System.nanoTime();
        try {
            run.run();
        } catch (RuntimeException | Error e) {
            // an Error too (JavaCPP's OutOfMemoryError past its memory limit, say): the table
            // still prints
            e.printStackTrace(System.err);
            table.row(check, "failed: " + e, false);
        } finally {
            System.out.printf(
                    Locale.ROOT, "time: %s %.1f s%n", check, (System.nanoTime() - start) / 1e9);
        }
    }

    /**
     * The NCCL collectives again across {@code n} GPUs, one rank each (devices {@code 0..n-1}), so
     * that NCCL really reduces and moves data between ranks.
     */
    private static void multiGpuCollectives(int n, CheckTable table) {
        NcclCommunicator[] group = new NcclCommunicator[n];
        try {
            NcclUniqueId id = NcclCommunicator.newUniqueId();
            // every rank must be joining at once: the init waits for the others
            NcclCollectivesCheck.onRanks(
                            n,
                            r -> NcclCommunicator.create(id, r, n, r, TimeUnit.SECONDS.toNanos(60)))
                    .toArray(group);
            NcclCollectivesCheck.run(group, table);
        } catch (RuntimeException e) {
            e.printStackTrace(System.err);
            table.row("nccl collectives (" + n + " ranks)", "failed: " + e, false);
        } finally {
            NcclCollectivesCheck.close(group);
        }
    }

    /**
     * The checks' world-size-1 communicator. One a check left aborted (a timeout, an NCCL error) is
     * replaced before the next check, so that check's row says what it found, not "broken".
     */
    private static final class World implements AutoCloseable {
        private final int device;
        private NcclCommunicator comm;

        World(int device) {
            this.device = device;
            this.comm = create(device);
        }

        NcclCommunicator comm() {
            if (comm.failed()) {
                System.out.println("a fresh world-size-1 communicator: the last one was aborted");
                comm.close();
                comm = create(device);
            }
            return comm;
        }

        private static NcclCommunicator create(int device) {
            return NcclCommunicator.create(
                    NcclCommunicator.newUniqueId(), 0, 1, device, TIMEOUT_NS);
        }

        @Override
        public void close() {
            comm.close();
        }
    }

    static int run(GpuLibraries libraries, int device, List<DeviceCheck> more) {
        long start = System.nanoTime();
        CheckTable table = new CheckTable();
        System.out.println("libraries: " + libraries.describe());
        GpuProbe.Result probe = GpuProbe.probe(libraries);
        table.row("probe", probe.describe(), probe.usable());
        if (!probe.usable()) {
            table.print();
            return 3;
        }
        try (World world = new World(device);
                CudaKernels kernels = CudaKernels.load(device)) {
            System.out.println("kernels compiled for " + kernels.arch());
            timed(
                    "GpuCpuComparison",
                    table,
                    () -> GpuCpuComparison.run(world::comm, kernels, table));
            timed("RestagingCheck", table, () -> RestagingCheck.run(world.comm(), kernels, table));
            timed(
                    "Fp8HeldCheck",
                    table,
                    () -> Fp8HeldCheck.run(kernels, world.comm().stream(), table));
            timed(
                    "LowLatencyGraphCheck",
                    table,
                    () -> LowLatencyGraphCheck.run(world::comm, kernels, table));
            timed("GpuTimings", table, () -> GpuTimings.run(world.comm(), kernels, table));
            timed(
                    "ServedStepTiming",
                    table,
                    () -> ServedStepTiming.run(world.comm(), device, table));
            timed(
                    "NcclCollectivesCheck",
                    table,
                    () -> NcclCollectivesCheck.run(new NcclCommunicator[] {world.comm()}, table));
        } catch (RuntimeException | LinkageError e) {
            // the world-size-1 communicator or the kernels could not be made
            e.printStackTrace(System.err);
            table.row("run", "failed: " + e, false);
        }
        for (DeviceCheck check : more) {
            timed(check.getClass().getSimpleName(), table, () -> check.run(device, table));
        }
        if (probe.devices() >= 2) {
            int n = Math.min(probe.devices(), MAX_RANKS);
            timed(
                    "NcclCollectivesCheck on " + n + " GPUs",
                    table,
                    () -> multiGpuCollectives(n, table));
        }
        table.print();
        System.out.printf(
                Locale.ROOT, "%ngpu-check took %.0f s%n", (System.nanoTime() - start) / 1e9);
        return table.failed() ? 1 : 0;
    }
}
