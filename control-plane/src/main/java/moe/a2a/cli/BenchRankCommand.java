package moe.a2a.cli;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import moe.a2a.bench.BenchRun;
import moe.a2a.bench.BenchScope;
import moe.a2a.bench.BenchWorkload;
import moe.a2a.bench.RankTimes;
import moe.a2a.comm.tcp.TcpCommunicator;
import moe.a2a.comm.tcp.TcpConfig;
import moe.a2a.comm.tcp.TcpTransport;
import moe.a2a.dispatch.DispatchDType;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * One rank of {@code bench --transport tcp}, started by it as a child process: publishes its data
 * port as a file, waits for every rank's, connects, runs its part and writes its times.
 */
@Command(
        name = "bench-rank",
        hidden = true,
        description = "One rank of bench --transport tcp (started by bench).")
final class BenchRankCommand implements Callable<Integer> {
    @Option(names = "--workload", required = true)
    String workload;

    @Option(names = "--rank", required = true)
    int rank;

    @Option(names = "--dir", required = true)
    Path dir;

    @Option(names = "--group-id", required = true)
    long groupId;

    @Option(names = "--iters", required = true)
    int iters;

    @Option(names = "--warmup", required = true)
    int warmup;

    @Option(names = "--scope", required = true)
    BenchScope scope;

    @Option(names = "--dispatch-dtype", defaultValue = "bf16")
    String dispatchDType;

    @Option(names = "--redundant-experts", defaultValue = "0")
    int redundantExperts;

    @Override
    public Integer call() throws Exception {
        BenchWorkload w = BenchWorkload.named(workload);
        int n = w.worldSize();
        long timeoutNs = TimeUnit.SECONDS.toNanos(120);
        try (TcpTransport transport = new TcpTransport(1)) {
            TcpCommunicator comm =
                    TcpCommunicator.bind(
                            transport,
                            new TcpConfig(
                                    rank,
                                    n,
                                    groupId,
                                    new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                                    timeoutNs,
                                    TcpConfig.DEFAULT_MAX_FRAME_BYTES));
            Path tmp = dir.resolve("rank-" + rank + ".port.tmp");
            Files.writeString(tmp, Integer.toString(comm.localAddress().getPort()));
            Files.move(tmp, dir.resolve("rank-" + rank + ".port"), StandardCopyOption.ATOMIC_MOVE);
            List<InetSocketAddress> peers = new ArrayList<>();
            long deadline = System.nanoTime() + timeoutNs;
            for (int r = 0; r < n; r++) {
                Path port = dir.resolve("rank-" + r + ".port");
                while (!Files.exists(port)) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("rank " + r + " never published its port");
                    }
                    Thread.sleep(20);
                }
                peers.add(
                        new InetSocketAddress(
                                InetAddress.getLoopbackAddress(),
                                Integer.parseInt(Files.readString(port).trim())));
            }
            comm.connect(peers);
            RankTimes times =
                    BenchRun.rank(
                            w,
                            scope,
                            comm,
                            warmup,
                            iters,
                            DispatchDType.parse("--dispatch-dtype", dispatchDType),
                            redundantExperts);
            comm.barrier();
            comm.close();
            Path out = dir.resolve("rank-" + rank + ".times.tmp");
            Files.writeString(
                    out,
                    times.ok()
                            + "\n"
                            + join(times.dispatchNs())
                            + "\n"
                            + join(times.combineNs())
                            + "\n"
                            + join(times.barrierNs())
                            + "\n");
            Files.move(out, dir.resolve("rank-" + rank + ".times"), StandardCopyOption.ATOMIC_MOVE);
        }
        return 0;
    }

    static RankTimes read(Path file) throws Exception {
        List<String> lines = Files.readAllLines(file);
        return new RankTimes(
                parse(lines.get(1)),
                parse(lines.get(2)),
                parse(lines.get(3)),
                Boolean.parseBoolean(lines.get(0)));
    }

    private static String join(long[] values) {
        return Arrays.stream(values).mapToObj(Long::toString).collect(Collectors.joining(" "));
    }

    private static long[] parse(String line) {
        return Arrays.stream(line.trim().split(" ")).mapToLong(Long::parseLong).toArray();
    }
}
