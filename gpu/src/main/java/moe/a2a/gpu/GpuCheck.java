package moe.a2a.gpu;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import moe.a2a.comm.nccl.NcclCommunicator;
import moe.a2a.comm.nccl.NcclUniqueId;
import org.jspecify.annotations.Nullable;

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
     * arguments). {@code --list} prints the checks' names, {@code --only NAME} runs the probe and
     * that check alone (gpu-check.sh runs each in a JVM of its own, so that a crash or a poisoned
     * CUDA context costs one check), {@code --rows FILE} appends each row to a file as it is added,
     * and {@code --print-rows FILE} prints such a file's rows as one table.
     */
    public static int run(String[] args, List<DeviceCheck> more) {
        Path cuda = null;
        Path nccl = null;
        Path rows = null;
        String only = null;
        int device = 0;
        try {
            for (int i = 0; i < args.length; i++) {
                switch (args[i]) {
                    case "--cuda-lib-dir" -> cuda = Path.of(value(args, ++i));
                    case "--nccl-lib-dir" -> nccl = Path.of(value(args, ++i));
                    case "--device" -> device = Integer.parseInt(value(args, ++i));
                    case "--rows" -> rows = Path.of(value(args, ++i));
                    case "--only" -> only = value(args, ++i);
                    case "--list" -> {
                        checkNames(more).forEach(System.out::println);
                        return 0;
                    }
                    case "--print-rows" -> {
                        return CheckTable.printSaved(Path.of(value(args, ++i)));
                    }
                    default -> throw new IllegalArgumentException(args[i]);
                }
            }
        } catch (IllegalArgumentException e) {
            System.err.println(
                    "usage: GpuCheck [--cuda-lib-dir DIR] [--nccl-lib-dir DIR] [--device N]"
                            + " [--only CHECK] [--rows FILE] | --list | --print-rows FILE ("
                            + e.getMessage()
                            + ")");
            return 2;
        }
        if (only != null && !checkNames(more).contains(only)) {
            System.err.println("--only: " + only + " (expected one of " + checkNames(more) + ")");
            return 2;
        }
        CheckTable table = rows == null ? new CheckTable() : CheckTable.savedTo(rows);
        return run(GpuLibraries.resolve(cuda, nccl), device, more, only, table);
    }

    private static String value(String[] args, int i) {
        if (i >= args.length) {
            throw new IllegalArgumentException(args[i - 1] + " needs a value");
        }
        return args[i];
    }

    /** The checks' names, in the order they run: what {@code --only} takes. */
    static List<String> checkNames(List<DeviceCheck> more) {
        List<String> names = new ArrayList<>();
        names.add(PROBE);
        SECTIONS.forEach(s -> names.add(s.name()));
        more.forEach(c -> names.add(c.getClass().getSimpleName()));
        names.add(MULTI_GPU);
        return names;
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

    /** One of the checks that share the world-size-1 communicator and the kernels. */
    private record Section(String name, SectionBody body) {}

    @FunctionalInterface
    private interface SectionBody {
        void run(World world, CudaKernels kernels, int device, CheckTable table);
    }

    private static final String PROBE = "probe";

    private static final String MULTI_GPU = "NcclCollectivesCheck across GPUs";

    private static final List<Section> SECTIONS =
            List.of(
                    new Section(
                            "GpuCpuComparison",
                            (w, k, d, t) -> GpuCpuComparison.run(w::comm, k, t)),
                    new Section(
                            "RestagingCheck", (w, k, d, t) -> RestagingCheck.run(w.comm(), k, t)),
                    new Section(
                            "Fp8HeldCheck",
                            (w, k, d, t) -> Fp8HeldCheck.run(k, w.comm().stream(), t)),
                    new Section(
                            "LowLatencyGraphCheck",
                            (w, k, d, t) -> LowLatencyGraphCheck.run(w::comm, k, t)),
                    new Section("GpuTimings", (w, k, d, t) -> GpuTimings.run(w.comm(), k, t)),
                    new Section(
                            "ServedStepTiming",
                            (w, k, d, t) -> ServedStepTiming.run(w.comm(), d, t)),
                    new Section(
                            "NcclCollectivesCheck",
                            (w, k, d, t) ->
                                    NcclCollectivesCheck.run(
                                            new NcclCommunicator[] {w.comm()}, t)));

    /** Runs the probe, then every check, or only the check named {@code only} when not null. */
    static int run(
            GpuLibraries libraries,
            int device,
            List<DeviceCheck> more,
            @Nullable String only,
            CheckTable table) {
        long start = System.nanoTime();
        Predicate<String> selected = only == null ? name -> true : only::equals;
        System.out.println("libraries: " + libraries.describe());
        GpuProbe.Result probe = GpuProbe.probe(libraries);
        if (selected.test(PROBE) || !probe.usable()) {
            table.row(PROBE, probe.describe(), probe.usable());
        }
        if (!probe.usable()) {
            if (only == null) {
                table.print();
            }
            return 3;
        }
        List<Section> sections = SECTIONS.stream().filter(s -> selected.test(s.name())).toList();
        if (!sections.isEmpty()) {
            try (World world = new World(device);
                    CudaKernels kernels = CudaKernels.load(device)) {
                System.out.println("kernels compiled for " + kernels.arch());
                for (Section section : sections) {
                    timed(
                            section.name(),
                            table,
                            () -> section.body().run(world, kernels, device, table));
                }
            } catch (RuntimeException | LinkageError e) {
                // the world-size-1 communicator or the kernels could not be made
                e.printStackTrace(System.err);
                table.row("run", "failed: " + e, false);
            }
        }
        for (DeviceCheck check : more) {
            String name = check.getClass().getSimpleName();
            if (selected.test(name)) {
                timed(name, table, () -> check.run(device, table));
            }
        }
        if (probe.devices() >= 2 && selected.test(MULTI_GPU)) {
            int n = Math.min(probe.devices(), MAX_RANKS);
            timed(MULTI_GPU, table, () -> multiGpuCollectives(n, table));
        }
        if (only == null) {
            // a run of one check leaves the table to the script that ran them all
            table.print();
            System.out.printf(
                    Locale.ROOT, "%ngpu-check took %.0f s%n", (System.nanoTime() - start) / 1e9);
        }
        return table.failed() ? 1 : 0;
    }
}
