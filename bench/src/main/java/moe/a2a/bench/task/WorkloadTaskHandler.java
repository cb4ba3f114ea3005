package moe.a2a.bench.task;

import java.util.Objects;
import moe.a2a.bench.BenchRun;
import moe.a2a.bench.BenchScope;
import moe.a2a.bench.BenchTaskCodec;
import moe.a2a.bench.HostBench;
import moe.a2a.bench.RankTimes;
import moe.a2a.experts.task.RankContext;
import moe.a2a.experts.task.RankTaskHandler;
import moe.a2a.experts.task.RankTaskRefusedException;
import moe.a2a.v1.BenchTask;
import moe.a2a.workload.BenchWorkload;

/**
 * Runs this rank's part of a canonical workload ({@link BenchRun}) on the group's communicator; a
 * group across hosts runs the dispatcher scope only, on the hierarchical path ({@link HostBench}).
 * Payload BenchTask, answer BenchRankResult. Stateless.
 */
public final class WorkloadTaskHandler implements RankTaskHandler {
    public static final String KIND = "bench.workload";

    @Override
    public String kind() {
        return KIND;
    }

    @Override
    public byte[] run(byte[] payload, RankContext rank) {
        BenchTask task = BenchTaskCodec.task(payload);
        RankTimes times;
        if (rank.acrossHosts()) {
            if (!task.getScope().equals(BenchScope.DISPATCHER.name())) {
                throw refusedAcrossHosts();
            }
            times =
                    HostBench.hierarchical(
                                    BenchWorkload.named(task.getWorkload()),
                                    Objects.requireNonNull(rank.topology(), "topology"),
                                    rank.communicator(),
                                    Objects.requireNonNull(rank.hostGroup(), "hostGroup"),
                                    task.getWarmup(),
                                    task.getIters())
                            .times();
        } else {
            times =
                    BenchRun.rank(
                            BenchWorkload.named(task.getWorkload()),
                            BenchScope.valueOf(task.getScope()),
                            rank.communicator(),
                            task.getWarmup(),
                            task.getIters());
        }
        return BenchTaskCodec.benchResult(times).toByteArray();
    }

    /** Why a group across hosts runs no collective and no transport scope. */
    static RankTaskRefusedException refusedAcrossHosts() {
        return new RankTaskRefusedException(
                "bench: a group across hosts runs the dispatcher scope of a workload only (a"
                        + " collective or the transport scope needs one flat group: --transport"
                        + " tcp)");
    }
}
