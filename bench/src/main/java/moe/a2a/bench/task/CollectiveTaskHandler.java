package moe.a2a.bench.task;

import moe.a2a.bench.BenchTaskCodec;
import moe.a2a.bench.CollectiveBench;
import moe.a2a.comm.Communicator;
import moe.a2a.experts.task.RankContext;
import moe.a2a.experts.task.RankTaskHandler;
import moe.a2a.v1.BenchTask;

/**
 * Runs this rank's part of a collective case ({@link CollectiveBench}: each iteration timed, the
 * first and last checked) on the group's communicator; a group across hosts refuses it. Payload
 * BenchTask with its collective set, answer BenchRankResult. Stateless.
 */
public final class CollectiveTaskHandler implements RankTaskHandler {
    public static final String KIND = "bench.collective";

    @Override
    public String kind() {
        return KIND;
    }

    @Override
    public byte[] run(byte[] payload, RankContext rank) {
        if (rank.acrossHosts()) {
            throw WorkloadTaskHandler.refusedAcrossHosts();
        }
        BenchTask task = BenchTaskCodec.task(payload);
        Communicator comm = rank.communicator();
        return BenchTaskCodec.collectiveBenchResult(
                        CollectiveBench.rank(
                                BenchTaskCodec.collectiveCase(task.getCollective(), comm.size()),
                                comm,
                                task.getWarmup(),
                                task.getIters()))
                .toByteArray();
    }
}
