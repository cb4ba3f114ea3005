package moe.a2a.bench;

import com.google.protobuf.InvalidProtocolBufferException;
import moe.a2a.comm.CollectiveAlgo;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;
import moe.a2a.protocol.TaskCodec;
import moe.a2a.v1.BenchRankResult;
import moe.a2a.v1.BenchTask;
import moe.a2a.v1.CollectiveBenchTask;
import moe.a2a.workload.BenchWorkload;

/**
 * Benchmark runs as the rank task payloads that carry them (bench_task.proto): the coordinator's
 * {@code GroupBench} encodes BenchTask and decodes the ranks' BenchRankResult; the handlers on
 * every rank the other way round. Each pair lives here so that both ends read a field the way the
 * other wrote it.
 */
public final class BenchTaskCodec {
    private BenchTaskCodec() {}

    public static BenchTask benchTask(
            BenchWorkload workload, BenchScope scope, int warmup, int iters) {
        return BenchTask.newBuilder()
                .setWorkload(workload.name())
                .setScope(scope.name())
                .setWarmup(warmup)
                .setIters(iters)
                .build();
    }

    public static BenchRankResult benchResult(RankTimes times) {
        BenchRankResult.Builder out = BenchRankResult.newBuilder().setOk(times.ok());
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

    public static RankTimes rankTimes(BenchRankResult res) {
        return new RankTimes(
                TaskCodec.toArray(res.getDispatchNsList()),
                TaskCodec.toArray(res.getCombineNsList()),
                TaskCodec.toArray(res.getBarrierNsList()),
                res.getOk());
    }

    /** A collective case for every rank of the group: {@link #collectiveCase} reads it back. */
    public static BenchTask collectiveBenchTask(CollectiveCase c, int warmup, int iters) {
        return BenchTask.newBuilder()
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

    public static BenchRankResult collectiveBenchResult(CollectiveTimes times) {
        BenchRankResult.Builder out =
                BenchRankResult.newBuilder().setOk(times.wrong() == 0).setWrong(times.wrong());
        for (long v : times.ns()) {
            out.addCollectiveNs(v);
        }
        return out.build();
    }

    public static CollectiveTimes collectiveTimes(BenchRankResult res) {
        return new CollectiveTimes(TaskCodec.toArray(res.getCollectiveNsList()), res.getWrong());
    }

    /** A rank task's payload as the BenchTask it carries; an error names the payload. */
    public static BenchTask task(byte[] payload) {
        try {
            return BenchTask.parseFrom(payload);
        } catch (InvalidProtocolBufferException e) {
            throw new IllegalArgumentException("bench task payload: " + e.getMessage(), e);
        }
    }

    /** A rank's answer as the BenchRankResult it carries; an error names the answer. */
    public static BenchRankResult result(byte[] answer) {
        try {
            return BenchRankResult.parseFrom(answer);
        } catch (InvalidProtocolBufferException e) {
            throw new IllegalArgumentException("bench rank answer: " + e.getMessage(), e);
        }
    }
}
