package moe.a2a.cli;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import moe.a2a.bench.Collective;
import moe.a2a.bench.CollectiveBench;
import moe.a2a.bench.CollectiveCase;
import moe.a2a.bench.CollectiveTimes;
import moe.a2a.comm.CollectiveAlgo;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.Transport;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * One rank of {@code bench --collective --transport tcp}, {@code shm} or {@code nccl}, started by
 * it as a child process. TCP and shm: joins its siblings ({@link ChildRankGroup}). NCCL: rank 0
 * publishes a fresh unique id as a file, every rank joins with it on CUDA device = its rank. Then
 * it runs every case of the cases file in order and writes each case's times as soon as it has
 * them.
 */
@Command(
        name = "bench-collective-rank",
        hidden = true,
        description = "One rank of bench --collective --transport tcp|shm|nccl (started by bench).")
final class BenchCollectiveRankCommand implements Callable<Integer> {
    @Option(names = "--transport", defaultValue = "tcp")
    Transport transport;

    @Mixin GpuOptions gpu;

    @Option(names = "--rank", required = true)
    int rank;

    @Option(names = "--ranks", required = true)
    int ranks;

    @Option(names = "--dir", required = true)
    Path dir;

    @Option(names = "--group-id", required = true)
    long groupId;

    @Option(names = "--cases", required = true)
    Path cases;

    @Option(names = "--iters", required = true)
    int iters;

    @Option(names = "--warmup", required = true)
    int warmup;

    @Override
    public Integer call() throws Exception {
        List<CollectiveCase> todo = new ArrayList<>();
        for (String line : Files.readAllLines(cases)) {
            todo.add(decode(line, ranks));
        }
        // a device transport runs rank r on device r
        ChildRankGroup.run(
                transport,
                ChildRankGroup.settings(rank, gpu.cudaLibDir, gpu.ncclLibDir),
                rank,
                ranks,
                groupId,
                dir,
                comm -> runCases(todo, comm));
        return 0;
    }

    /** Every case in order, each case's times written as soon as they are in. */
    private void runCases(List<CollectiveCase> todo, Communicator comm) throws Exception {
        for (int i = 0; i < todo.size(); i++) {
            CollectiveTimes times = CollectiveBench.rank(todo.get(i), comm, warmup, iters);
            PublishedFiles.publish(
                    dir.resolve("case-" + i + ".rank-" + rank + ".tmp"),
                    timesFile(dir, i, rank),
                    (times.wrong() + "\n" + join(times.ns()) + "\n")
                            .getBytes(StandardCharsets.UTF_8));
        }
    }

    static Path timesFile(Path dir, int caseIndex, int rank) {
        return dir.resolve("case-" + caseIndex + ".rank-" + rank + ".times");
    }

    static CollectiveTimes read(Path file) throws Exception {
        List<String> lines = Files.readAllLines(file);
        return new CollectiveTimes(
                Arrays.stream(lines.get(1).trim().split(" ")).mapToLong(Long::parseLong).toArray(),
                Long.parseLong(lines.get(0).trim()));
    }

    /** One line of the cases file: collective, size, dtype, op, algo, root. */
    static String encode(CollectiveCase c) {
        return String.join(
                " ",
                c.collective().label(),
                Long.toString(c.sizeBytes()),
                c.dtype().name(),
                c.op().name(),
                c.algo().name(),
                Integer.toString(c.root()));
    }

    static CollectiveCase decode(String line, int ranks) {
        String[] f = line.trim().split(" ");
        return new CollectiveCase(
                Collective.parse("collective", f[0]),
                ranks,
                Long.parseLong(f[1]),
                DType.valueOf(f[2].toUpperCase(Locale.ROOT)),
                ReduceOp.valueOf(f[3]),
                CollectiveAlgo.valueOf(f[4]),
                Integer.parseInt(f[5]));
    }

    private static String join(long[] values) {
        return Arrays.stream(values).mapToObj(Long::toString).collect(Collectors.joining(" "));
    }
}
