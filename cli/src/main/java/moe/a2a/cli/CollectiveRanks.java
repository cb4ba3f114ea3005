package moe.a2a.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import moe.a2a.bench.CollectiveBench;
import moe.a2a.bench.CollectiveCase;
import moe.a2a.bench.CollectiveTimes;
import moe.a2a.bench.MachineLimits;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import moe.a2a.comm.local.LocalGroup;

/**
 * Where the ranks of {@code bench --collective} run: {@code local} as threads of this JVM, the
 * other transports as child processes ({@code bench-collective-rank}); either way each case's times
 * go to a {@link CaseSink} as soon as every rank has them.
 */
final class CollectiveRanks {
    private CollectiveRanks() {}

    /** Takes case {@code i}'s times from every rank. */
    @FunctionalInterface
    interface CaseSink {
        void accept(int i, List<CollectiveTimes> times) throws Exception;
    }

    /** Every case on one in-process group, one thread per rank. */
    static void runLocal(
            CollectiveBenchRun.Plan plan,
            List<CollectiveCase> cases,
            Map<Long, Double> copyLinks,
            CaseSink sink)
            throws Exception {
        int n = cases.get(0).ranks();
        LocalGroup group = new LocalGroup(n, TimeUnit.SECONDS.toNanos(120));
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            for (int i = 0; i < cases.size(); i++) {
                CollectiveCase c = cases.get(i);
                copyLinks.computeIfAbsent(c.bytes(), b -> MachineLimits.copyGbps((int) (long) b));
                List<Future<CollectiveTimes>> ranks = new ArrayList<>();
                for (int r = 0; r < n; r++) {
                    final int rank = r;
                    ranks.add(
                            pool.submit(
                                    () ->
                                            CollectiveBench.rank(
                                                    c,
                                                    group.communicator(rank),
                                                    plan.warmup(),
                                                    plan.iters())));
                }
                List<CollectiveTimes> times = new ArrayList<>();
                for (Future<CollectiveTimes> f : ranks) {
                    times.add(f.get());
                }
                sink.accept(i, times);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * Every case on one group of child processes ({@code bench-collective-rank}): TCP and shm ranks
     * meet through the temporary folder ({@link ChildRankGroup}), NCCL ranks (one per GPU, device =
     * rank) through rank 0's unique id there; each case's times come back as files.
     */
    static void runProcesses(
            CollectiveBenchRun.Plan plan,
            int n,
            List<CollectiveCase> cases,
            Transport transport,
            List<String> gpuArgs,
            CaseSink sink)
            throws Exception {
        try (RankProcesses children = RankProcesses.create("moe-a2a-bench-coll-")) {
            Path dir = children.dir();
            Path caseFile = dir.resolve("cases");
            Files.write(caseFile, cases.stream().map(BenchCollectiveRankCommand::encode).toList());
            long maxBytes = cases.stream().mapToLong(CollectiveCase::bytes).max().orElse(0);
            List<String> jvmOptions =
                    List.of("-Xmx512m", "-XX:MaxDirectMemorySize=" + (4 * maxBytes + (512L << 20)));
            for (int r = 0; r < n; r++) {
                List<String> args =
                        new ArrayList<>(
                                List.of(
                                        "bench-collective-rank",
                                        "--transport",
                                        transport.label(),
                                        "--rank",
                                        Integer.toString(r),
                                        "--ranks",
                                        Integer.toString(n),
                                        "--dir",
                                        dir.toString(),
                                        "--group-id",
                                        Long.toString(children.groupId()),
                                        "--cases",
                                        caseFile.toString(),
                                        "--iters",
                                        Integer.toString(plan.iters()),
                                        "--warmup",
                                        Integer.toString(plan.warmup())));
                if (Transports.reach(transport) == TransportReach.DEVICES) {
                    args.addAll(gpuArgs);
                }
                children.start(jvmOptions, args);
            }
            for (int i = 0; i < cases.size(); i++) {
                String before =
                        "case "
                                + i
                                + " ("
                                + cases.get(i).collective().label()
                                + ", "
                                + cases.get(i).bytes()
                                + " bytes)";
                List<CollectiveTimes> times = new ArrayList<>();
                for (int r = 0; r < n; r++) {
                    Path file = BenchCollectiveRankCommand.timesFile(dir, i, r);
                    times.add(BenchCollectiveRankCommand.read(children.await(r, file, before)));
                }
                sink.accept(i, times);
            }
            for (int r = 0; r < n; r++) {
                children.awaitExit(r, 2, TimeUnit.MINUTES);
            }
        }
    }
}
