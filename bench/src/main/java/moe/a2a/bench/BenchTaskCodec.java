package moe.a2a.bench;

import moe.a2a.comm.CollectiveAlgo;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;
import moe.a2a.protocol.TaskCodec;
import moe.a2a.v1.BenchRankResult;
import moe.a2a.v1.BenchTask;
import moe.a2a.v1.CollectiveBenchTask;
import moe.a2a.workload.BenchWorkload;

/**
 * Benchmark runs as the ClusterService messages that carry them, on both ends of a worker's
 * session: the control plane encodes BenchTask and decodes the ranks' BenchRankResult; the worker
 * the other way round. Each pair lives here so that both ends read a field the way the other wrote
 * it.
 */
public final class BenchTaskCodec {
    private BenchTaskCodec() {}

    public static BenchTask benchTask(
            long benchId, BenchWorkload workload, BenchScope scope, int warmup, int iters) {
        return BenchTask.newBuilder()
                .setBenchId(benchId)
                .setWorkload(workload.name())
                .setScope(scope.name())
                .setWarmup(warmup)
                .setIters(iters)
                .build();
    }

    public static BenchRankResult benchResult(long benchId, RankTimes times) {
        BenchRankResult.Builder out =
                BenchRankResult.newBuilder().setBenchId(benchId).setOk(times.ok());
        for (long v : times.dispatchNs()) {
            out.addDispatchNs(v);
        }
        for (long v : times.combineNs()) {
            out.addCombineNs(v);
        }
        for (long v : times.barrierNs()) {
            out.addBarrierNs(v);
        }
        return out.build();
    }

    /** A rank's benchmark run that did not happen or broke; the control plane breaks the group. */
    public static BenchRankResult benchFailure(long benchId, String error) {
        return BenchRankResult.newBuilder().setBenchId(benchId).setError(error).build();
    }

    public static RankTimes rankTimes(BenchRankResult res) {
        return new RankTimes(
                TaskCodec.toArray(res.getDispatchNsList()),
                TaskCodec.toArray(res.getCombineNsList()),
                TaskCodec.toArray(res.getBarrierNsList()),
                res.getOk());
    }

    /** A collective case for every rank of the group: {@link #collectiveCase} reads it back. */
    public static BenchTask collectiveBenchTask(
            long benchId, CollectiveCase c, int warmup, int iters) {
        return BenchTask.newBuilder()
                .setBenchId(benchId)
                .setWarmup(warmup)
                .setIters(iters)
                .setCollective(
                        CollectiveBenchTask.newBuilder()
                                .setCollective(c.collective().label())
                                .setSizeBytes(c.sizeBytes())
                                .setDtype(CollectiveCase.label(c.dtype()))
                                .setOp(CollectiveCase.label(c.op()))
                                .setAlgo(CollectiveCase.label(c.algo()))
                                .setRoot(c.root()))
                .build();
    }

    /**
     * The case of a {@link #collectiveBenchTask} on a group of {@code ranks}; an error names the
     * field.
     */
    public static CollectiveCase collectiveCase(CollectiveBenchTask task, int ranks) {
        return new CollectiveCase(
                Collective.parse("collective", task.getCollective()),
                ranks,
                task.getSizeBytes(),
                CollectiveCase.choice("dtype", task.getDtype(), DType.values(), DType.FP32),
                CollectiveCase.choice("op", task.getOp(), ReduceOp.values(), ReduceOp.SUM),
                CollectiveCase.choice(
                        "algo", task.getAlgo(), CollectiveAlgo.values(), CollectiveAlgo.AUTO),
                task.getRoot());
    }

    public static BenchRankResult collectiveBenchResult(long benchId, CollectiveTimes times) {
        BenchRankResult.Builder out =
                BenchRankResult.newBuilder()
                        .setBenchId(benchId)
                        .setOk(times.wrong() == 0)
                        .setWrong(times.wrong());
        for (long v : times.ns()) {
            out.addCollectiveNs(v);
        }
        return out.build();
    }

    public static CollectiveTimes collectiveTimes(BenchRankResult res) {
        return new CollectiveTimes(TaskCodec.toArray(res.getCollectiveNsList()), res.getWrong());
    }
}
