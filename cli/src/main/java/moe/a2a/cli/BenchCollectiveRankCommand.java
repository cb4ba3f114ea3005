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
import moe.a2a.comm.nccl.NcclCommunicator;
import moe.a2a.comm.nccl.NcclUniqueId;
import moe.a2a.comm.tcp.TcpTransport;
import moe.a2a.gpu.GpuProbe;
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
    private static final long TIMEOUT_NS = TimeUnit.SECONDS.toNanos(120);

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
        if (transport == Transport.NCCL) {
            GpuProbe.Result probe = gpu.probe();
            if (!probe.usable()) {
                throw new IllegalArgumentException("--transport: nccl: " + probe.describe());
            }
            try (NcclCommunicator comm =
                    NcclCommunicator.create(ncclId(), rank, ranks, rank, TIMEOUT_NS)) {
                runCases(todo, comm);
                comm.barrier();
            }
            return 0;
        }
        try (TcpTransport tcp = new TcpTransport(1)) {
            Communicator comm =
                    ChildRankGroup.join(transport, rank, ranks, groupId, dir, TIMEOUT_NS, tcp);
            runCases(todo, comm);
            ChildRankGroup.finish(comm, dir, rank, ranks, TIMEOUT_NS);
        }
        return 0;
    }

    /** Every case in order, each case's times written as soon as they are in. */
    private void runCases(List<CollectiveCase> todo, Communicator comm) throws Exception {
        for (int i = 0; i < todo.size(); i++) {
            CollectiveTimes times = CollectiveBench.rank(todo.get(i), comm, warmup, iters);
            Path out = dir.resolve("case-" + i + ".rank-" + rank + ".tmp");
            Files.writeString(out, times.wrong() + "\n" + join(times.ns()) + "\n");
            Files.move(out, timesFile(dir, i, rank), StandardCopyOption.ATOMIC_MOVE);
        }
    }

    /** Rank 0 makes the group's ncclUniqueId and publishes it; the others read it. */
    private NcclUniqueId ncclId() throws Exception {
        if (rank == 0) {
            NcclUniqueId id = NcclCommunicator.newUniqueId();
            Path tmp = dir.resolve("nccl-id.tmp");
            Files.write(tmp, id.toByteArray());
            Files.move(tmp, dir.resolve("nccl-id"), StandardCopyOption.ATOMIC_MOVE);
            return id;
        }
        return NcclUniqueId.of(Files.readAllBytes(await("nccl-id")), "nccl-id");
    }

    /** Waits for a file another rank publishes. */
    private Path await(String name) throws Exception {
        Path file = dir.resolve(name);
        long deadline = System.nanoTime() + TIMEOUT_NS;
        while (!Files.exists(file)) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(name + " never appeared in " + dir);
            }
            Thread.sleep(20);
        }
        return file;
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
