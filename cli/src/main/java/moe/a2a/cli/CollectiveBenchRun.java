package moe.a2a.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;
import moe.a2a.bench.Collective;
import moe.a2a.bench.CollectiveBench;
import moe.a2a.bench.CollectiveCase;
import moe.a2a.bench.CollectiveReport;
import moe.a2a.bench.MachineLimits;
import moe.a2a.comm.CollectiveAlgo;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;

/**
 * {@code bench --collective}: nccl-tests' collective benchmark on local, tcp and nccl ranks. For
 * every group size, transport, collective and size it prints nccl-tests' columns (size, count,
 * type, redop, root, time, algbw, busbw, #wrong) and, next to busbw, the link's limit measured in
 * the same run and busbw's share of it; with {@code --scaling} (2, 4 and 8 ranks) each row's busbw
 * over the 2-rank row's.
 */
final class CollectiveBenchRun {
    static final int DEFAULT_ITERS = CollectiveBench.DEFAULT_ITERS;
    static final int DEFAULT_WARMUP = CollectiveBench.DEFAULT_WARMUP;
    static final List<Integer> SCALING_RANKS = List.of(2, 4, 8);

    /** Bytes of the loopback socket pair's measurement (one stream, as iperf3). */
    private static final long LOOPBACK_BYTES = 1L << 30;

    private static final String HEADER_FORMAT =
            "%-13s %-9s %3s %12s %11s %5s %5s %5s %-6s %11s %11s %11s %8s %10s %6s%n";
    private static final String ROW_FORMAT =
            "%-13s %-9s %3d %12d %11d %5s %5s %5d %-6s %11.1f %11.3f %11.3f %8d ";
    private static final String LINK_FORMAT = "%10.2f %5.0f%%%n";
    private static final String NO_LINK_FORMAT = "%10s %6s%n";

    private CollectiveBenchRun() {}

    /** What one {@code bench --collective} runs. */
    record Plan(
            List<Collective> collectives,
            List<Transport> transports,
            List<Integer> rankCounts,
            List<Long> sizes,
            boolean scaling,
            DType dtype,
            ReduceOp op,
            CollectiveAlgo algo,
            int root,
            int warmup,
            int iters) {

        /**
         * The cases of a group of {@code n} ranks, collective by collective, size by size; a size
         * that rounds to the same bytes as the one before it (blocked collectives at a few bytes)
         * runs once.
         */
        List<Sized> cases(int n) {
            List<Sized> out = new ArrayList<>();
            for (Collective c : collectives) {
                long last = -1;
                for (long size : sizes) {
                    CollectiveCase k =
                            new CollectiveCase(
                                    c, n, sizeFor(c, size, n, scaling), dtype, op, algo, root);
                    if (k.bytes() != last) {
                        out.add(new Sized(k, size));
                        last = k.bytes();
                    }
                }
            }
            return out;
        }
    }

    /** A case and the size asked for it (the key of scaling efficiency). */
    record Sized(CollectiveCase c, long requested) {}

    /**
     * The size of a case: {@code bytes}; with {@code scaling}, all-gather's grows with the ranks
     * ({@code bytes × N / 2}) so that each rank's input stays what it is at 2 ranks, as every other
     * collective's per-rank buffer does at a fixed size.
     */
    static long sizeFor(Collective c, long bytes, int n, boolean scaling) {
        return scaling && c == Collective.ALLGATHER ? bytes * n / 2 : bytes;
    }

    /** A measured case and the requested size it stands for (the key of scaling efficiency). */
    record Measured(CollectiveReport report, long requested) {
        String key() {
            return report.c().collective().label()
                    + " "
                    + report.transport().label()
                    + " "
                    + requested;
        }
    }

    /** The labels of the plan's transports of {@code reaches}, comma-separated; empty if none. */
    private static String reached(Plan plan, TransportReach... reaches) {
        List<TransportReach> wanted = List.of(reaches);
        return Transport.labels(
                plan.transports().stream()
                        .filter(t -> wanted.contains(Transports.reach(t)))
                        .toList());
    }

    static int run(Plan plan, List<String> gpuArgs, Path json, Path plots) throws Exception {
        printColumns(plan);
        double loopback = 0;
        String network = reached(plan, TransportReach.NETWORK);
        if (!network.isEmpty()) {
            loopback = MachineLimits.loopbackTcpGbps(LOOPBACK_BYTES);
            System.out.printf(
                    Locale.ROOT,
                    "link %s: loopback TCP, one socket pair: %.2f GB/s%n",
                    network,
                    loopback);
        }
        String memory = reached(plan, TransportReach.THREADS, TransportReach.HOST);
        if (!memory.isEmpty()) {
            System.out.println(
                    "link "
                            + memory
                            + ": one Java thread's memcpy at the case's size, measured before it");
        }
        String devices = reached(plan, TransportReach.DEVICES);
        if (!devices.isEmpty()) {
            System.out.println(
                    "link " + devices + ": not measured (one process per GPU, devices 0 to N-1)");
        }
        printHeader();
        List<Measured> measured = new ArrayList<>();
        int failed = 0;
        Map<Long, Double> copyLinks = new HashMap<>();
        for (int n : plan.rankCounts()) {
            List<Sized> sized = plan.cases(n);
            List<CollectiveCase> cases = sized.stream().map(Sized::c).toList();
            for (Transport transport : plan.transports()) {
                final double link = loopback;
                CollectiveRanks.CaseSink sink =
                        (i, times) -> {
                            CollectiveCase c = cases.get(i);
                            double l =
                                    switch (Transports.reach(transport)) {
                                        case NETWORK -> link;
                                        case THREADS, HOST ->
                                                copyLinks.computeIfAbsent(
                                                        c.bytes(),
                                                        b ->
                                                                MachineLimits.copyGbps(
                                                                        (int) (long) b));
                                        case DEVICES -> 0;
                                    };
                            CollectiveReport r = CollectiveReport.of(c, transport, times, l);
                            print(r);
                            measured.add(new Measured(r, sized.get(i).requested()));
                        };
                try {
                    if (Transports.reach(transport) == TransportReach.THREADS) {
                        CollectiveRanks.runLocal(plan, cases, copyLinks, sink);
                    } else {
                        CollectiveRanks.runProcesses(plan, n, cases, transport, gpuArgs, sink);
                    }
                } catch (Exception e) {
                    failed++;
                    String why = String.valueOf(e.getMessage()).strip();
                    System.out.printf(
                            Locale.ROOT,
                            "FAIL %s, %d ranks: the rest of its cases did not run: %s%n",
                            transport.label(),
                            n,
                            why.lines().limit(4).collect(Collectors.joining(" | ")));
                }
            }
        }
        return finish(measured, plan.scaling(), failed, json, plots);
    }

    /** What the columns mean: printed first. */
    static void printColumns(Plan plan) {
        System.out.println(
                "nccl-tests columns: size in bytes as nccl-tests means it; time = median over "
                        + plan.iters()
                        + " iterations (after "
                        + plan.warmup()
                        + " warm-up) of the slowest rank; algbw = size / time; busbw = algbw ×"
                        + " (all-reduce 2(N-1)/N, all-gather, reduce-scatter, all-to-all (N-1)/N,"
                        + " broadcast 1); #wrong = wrong elements over every rank's first and last"
                        + " result");
    }

    static void printHeader() {
        System.out.printf(
                Locale.ROOT,
                HEADER_FORMAT,
                "collective",
                "transport",
                "N",
                "size",
                "count",
                "type",
                "redop",
                "root",
                "algo",
                "time(us)",
                "algbw(GB/s)",
                "busbw(GB/s)",
                "#wrong",
                "link(GB/s)",
                "bus");
    }

    /**
     * After the rows: the scaling table (with {@code scaling}), the JSON rows and charts; the exit
     * code (1 when an element was wrong or {@code failed} runs did not finish).
     */
    static int finish(List<Measured> measured, boolean scaling, int failed, Path json, Path plots)
            throws Exception {
        Map<String, Double> base = new HashMap<>();
        if (scaling) {
            for (Measured m : measured) {
                if (m.report().c().ranks() == SCALING_RANKS.get(0)) {
                    base.put(m.key(), m.report().busbwGbps());
                }
            }
            printScaling(measured, base);
        }
        long wrong = 0;
        List<String> rows = new ArrayList<>();
        for (Measured m : measured) {
            wrong += m.report().wrong();
            rows.add(m.report().json(efficiency(m, base)));
        }
        if (json != null) {
            Files.writeString(json, "[\n" + String.join(",\n", rows) + "\n]\n");
        }
        if (plots != null) {
            CollectivePlots.write(plots, measured.stream().map(Measured::report).toList());
            System.out.println("charts written to " + plots);
        }
        if (wrong != 0) {
            System.out.printf(Locale.ROOT, "FAIL: %d wrong elements%n", wrong);
        }
        return wrong == 0 && failed == 0 ? 0 : 1;
    }

    private static double efficiency(Measured m, Map<String, Double> base) {
        Double b = base.get(m.key());
        return b == null || b <= 0 ? Double.NaN : m.report().busbwGbps() / b;
    }

    private static void printScaling(List<Measured> measured, Map<String, Double> base) {
        System.out.println(
                "scaling efficiency: busbw over the 2-rank run's at the same per-rank buffer"
                        + " (1.00 = busbw held as ranks were added)");
        System.out.printf(
                Locale.ROOT,
                "%-13s %-9s %12s %3s %11s %10s%n",
                "collective",
                "transport",
                "size@N=2",
                "N",
                "busbw(GB/s)",
                "efficiency");
        for (Measured m : measured) {
            CollectiveReport r = m.report();
            System.out.printf(
                    Locale.ROOT,
                    "%-13s %-9s %12d %3d %11.3f %10.2f%n",
                    r.c().collective().label(),
                    r.transport().label(),
                    m.requested(),
                    r.c().ranks(),
                    r.busbwGbps(),
                    efficiency(m, base));
        }
    }

    /** One row; the link and bus columns are {@code -} when the link was not measured. */
    static void print(CollectiveReport r) {
        CollectiveCase c = r.c();
        System.out.printf(
                Locale.ROOT,
                ROW_FORMAT,
                c.collective().label(),
                r.transport().label(),
                c.ranks(),
                c.bytes(),
                c.count(),
                c.dtype().name().toLowerCase(Locale.ROOT),
                c.redop(),
                c.rootColumn(),
                r.algoLabel(),
                r.timeUsP50(),
                r.algbwGbps(),
                r.busbwGbps(),
                r.wrong());
        if (r.linkGbps() > 0) {
            System.out.printf(Locale.ROOT, LINK_FORMAT, r.linkGbps(), 100 * r.busUtilisation());
        } else {
            System.out.printf(Locale.ROOT, NO_LINK_FORMAT, "-", "-");
        }
        System.out.flush();
    }
}
