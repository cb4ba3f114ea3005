package moe.a2a.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import moe.a2a.bench.Collective;
import moe.a2a.bench.CollectiveBench;
import moe.a2a.bench.CollectiveCase;
import moe.a2a.bench.CollectiveTimes;
import moe.a2a.comm.CollectiveAlgo;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.Transport;
import moe.a2a.comm.tcp.TcpTransport;
import moe.a2a.dispatch.DType;
import moe.a2a.kernels.ReduceOp;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * One rank of {@code bench --collective --transport tcp} or {@code shm}, started by it as a child
 * process: joins its siblings ({@link ChildRankGroup}), then runs every case of the cases file in
 * order and writes each case's times as soon as it has them.
 */
@Command(
        name = "bench-collective-rank",
        hidden = true,
        description = "One rank of bench --collective --transport tcp or shm (started by bench).")
final class BenchCollectiveRankCommand implements Callable<Integer> {
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

    @Option(names = "--transport", defaultValue = "tcp")
    Transport transport;

    @Override
    public Integer call() throws Exception {
        List<CollectiveCase> todo = new ArrayList<>();
        for (String line : Files.readAllLines(cases)) {
            todo.add(decode(line, ranks));
        }
        long timeoutNs = TimeUnit.SECONDS.toNanos(120);
        try (TcpTransport tcp = new TcpTransport(1)) {
            Communicator comm =
                    ChildRankGroup.join(transport, rank, ranks, groupId, dir, timeoutNs, tcp);
            for (int i = 0; i < todo.size(); i++) {
                CollectiveTimes times = CollectiveBench.rank(todo.get(i), comm, warmup, iters);
                Path out = dir.resolve("case-" + i + ".rank-" + rank + ".tmp");
                Files.writeString(out, times.wrong() + "\n" + join(times.ns()) + "\n");
                Files.move(out, timesFile(dir, i, rank), StandardCopyOption.ATOMIC_MOVE);
            }
            ChildRankGroup.finish(comm, dir, rank, ranks, timeoutNs);
        }
        return 0;
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
