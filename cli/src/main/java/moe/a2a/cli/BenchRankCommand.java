package moe.a2a.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import moe.a2a.bench.BenchExperts;
import moe.a2a.bench.BenchRun;
import moe.a2a.bench.BenchScope;
import moe.a2a.bench.BenchWorkloads;
import moe.a2a.bench.RankTimes;
import moe.a2a.comm.Transport;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.DispatchMode;
import moe.a2a.workload.BenchWorkload;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * One rank of {@code bench --transport tcp} or {@code shm}, started by it as a child process: joins
 * its siblings ({@link ChildRankGroup}), runs its part and writes its times.
 */
@Command(
        name = "bench-rank",
        hidden = true,
        description = "One rank of bench --transport tcp or shm (started by bench).")
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

    @Option(names = "--mode", defaultValue = "normal")
    String mode;

    @Option(names = "--tokens", defaultValue = "0")
    int tokens;

    @Option(names = "--transport", defaultValue = "tcp")
    Transport transport;

    @Option(names = "--redundant-experts", defaultValue = "0")
    int redundantExperts;

    @Option(names = "--expert-ffn", defaultValue = "0")
    int expertFfn;

    @Override
    public Integer call() throws Exception {
        BenchWorkload named = BenchWorkloads.resolve(workload);
        BenchWorkload w = tokens > 0 && tokens != named.tokens() ? named.withTokens(tokens) : named;
        ChildRankGroup.run(
                transport,
                ChildRankGroup.settings(rank, null, null),
                rank,
                w.worldSize(),
                groupId,
                dir,
                comm -> {
                    RankTimes times =
                            BenchRun.rank(
                                    w,
                                    scope,
                                    comm,
                                    warmup,
                                    iters,
                                    DispatchDType.parse("--dispatch-dtype", dispatchDType),
                                    DispatchMode.parse("--mode", mode),
                                    redundantExperts,
                                    BenchExperts.of(w, redundantExperts, rank, expertFfn));
                    write(times, dir.resolve("rank-" + rank + ".times"));
                });
        return 0;
    }

    /** Writes {@code times} for the parent to {@link #read}, atomically. */
    static void write(RankTimes times, Path file) throws Exception {
        PublishedFiles.publish(
                file,
                times.ok()
                        + "\n"
                        + join(times.dispatchNs())
                        + "\n"
                        + join(times.combineNs())
                        + "\n"
                        + join(times.barrierNs())
                        + "\n"
                        + join(times.expertNs())
                        + "\n");
    }

    static RankTimes read(Path file) throws Exception {
        List<String> lines = Files.readAllLines(file);
        return new RankTimes(
                parse(lines.get(1)),
                parse(lines.get(2)),
                parse(lines.get(3)),
                Boolean.parseBoolean(lines.get(0)),
                parse(lines.get(4)));
    }

    private static String join(long[] values) {
        return Arrays.stream(values).mapToObj(Long::toString).collect(Collectors.joining(" "));
    }

    private static long[] parse(String line) {
        return line.isBlank()
                ? new long[0]
                : Arrays.stream(line.trim().split(" ")).mapToLong(Long::parseLong).toArray();
    }
}
