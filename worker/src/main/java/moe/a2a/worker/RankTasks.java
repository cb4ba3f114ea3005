package moe.a2a.worker;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import moe.a2a.bench.BenchRun;
import moe.a2a.bench.BenchScope;
import moe.a2a.bench.BenchTaskCodec;
import moe.a2a.bench.CollectiveBench;
import moe.a2a.bench.HostBench;
import moe.a2a.bench.RankTimes;
import moe.a2a.comm.Communicator;
import moe.a2a.experts.RankStepResult;
import moe.a2a.kernels.DType;
import moe.a2a.metrics.StepStatsSnapshot;
import moe.a2a.protocol.TaskCodec;
import moe.a2a.protocol.TensorCodec;
import moe.a2a.v1.BenchRankResult;
import moe.a2a.v1.BenchTask;
import moe.a2a.v1.StepTask;
import moe.a2a.v1.WorkerMessage;
import moe.a2a.workload.BenchWorkload;
import org.jspecify.annotations.Nullable;

/**
 * Runs a worker's share of steps and benchmark runs on its formed group, answers each on the
 * session, and records each step in the rank's meters. A failure aborts the communicator, so that
 * the peers waiting on this rank fail at once instead of at their exchange timeout. Owned by the
 * worker's data-plane thread, like the staging buffer it reuses across steps.
 */
final class RankTasks {
    private static final long[] NO_QUEUE = new long[0];
    private ByteBuffer tokens = ByteBuffer.allocateDirect(0);

    /** Runs one step; {@code worldSize} is the current group's. */
    void step(
            StepTask task,
            LoadedRank loaded,
            FormedGroup group,
            int worldSize,
            SessionSender sender) {
        try {
            DType dtype = TensorCodec.dtype(task.getDtype(), "step.dtype");
            int n = task.getNumTokens();
            if (tokens.capacity() < task.getTokens().size()) {
                tokens =
                        ByteBuffer.allocateDirect(task.getTokens().size())
                                .order(ByteOrder.LITTLE_ENDIAN);
            }
            task.getTokens().copyTo(tokens.clear());
            RankStepResult r =
                    loaded.runtime()
                            .step(
                                    task.getLayer(),
                                    dtype,
                                    tokens.clear(),
                                    n,
                                    TaskCodec.routing(task, n),
                                    TaskCodec.capacity(task));
            int bytes = n * loaded.model().hidden() * dtype.sizeBytes();
            sender.send(
                    WorkerMessage.newBuilder()
                            .setResult(TaskCodec.stepResult(task.getStepId(), r, bytes))
                            .build());
            // This rank's view of the step: its own tokens' counts and its own stage times.
            long[][] sent = new long[worldSize][];
            long[][] received = new long[worldSize][];
            sent[loaded.rank()] = r.bytesSent();
            received[loaded.rank()] = r.bytesReceived();
            loaded.metrics()
                    .onStep(
                            new StepStatsSnapshot(
                                    task.getStepId(),
                                    task.getLayer(),
                                    loaded.runtime().placement(task.getLayer()).version(),
                                    1,
                                    n,
                                    r.tokensPerRank(),
                                    r.tokensPerExpert(),
                                    r.droppedPerExpert(),
                                    sent,
                                    received,
                                    r.routeNs(),
                                    r.dispatchNs(),
                                    r.expertNs(),
                                    r.combineNs()),
                            NO_QUEUE);
        } catch (RuntimeException e) {
            group.abort(e);
            sender.send(TaskCodec.stepFailure(task.getStepId(), e.getMessage()));
            loaded.metrics().onStepFailed(e, task.getNumTokens());
        }
    }

    /**
     * Runs this rank's part of one benchmark run: a workload, or a collective case. A group across
     * hosts runs the dispatcher scope only, on the hierarchical path.
     */
    void bench(BenchTask task, FormedGroup group, SessionSender sender) {
        BenchRankResult out;
        Communicator comm = group.main();
        String refused = group.acrossHosts() ? refusedAcrossHosts(task) : null;
        if (refused != null) {
            sender.send(
                    WorkerMessage.newBuilder()
                            .setBenchResult(BenchTaskCodec.benchFailure(task.getBenchId(), refused))
                            .build());
            return;
        }
        try {
            if (group.acrossHosts()) {
                out =
                        BenchTaskCodec.benchResult(
                                task.getBenchId(), acrossHosts(task, group).times());
            } else if (task.hasCollective()) {
                out =
                        BenchTaskCodec.collectiveBenchResult(
                                task.getBenchId(),
                                CollectiveBench.rank(
                                        BenchTaskCodec.collectiveCase(
                                                task.getCollective(), comm.size()),
                                        comm,
                                        task.getWarmup(),
                                        task.getIters()));
            } else {
                RankTimes times =
                        BenchRun.rank(
                                BenchWorkload.named(task.getWorkload()),
                                BenchScope.valueOf(task.getScope()),
                                comm,
                                task.getWarmup(),
                                task.getIters());
                out = BenchTaskCodec.benchResult(task.getBenchId(), times);
            }
        } catch (RuntimeException | OutOfMemoryError e) {
            // a collective case's buffers may not fit this rank's direct memory: say so, and live
            group.abort(e);
            out = BenchTaskCodec.benchFailure(task.getBenchId(), String.valueOf(e.getMessage()));
        }
        sender.send(WorkerMessage.newBuilder().setBenchResult(out).build());
    }

    /**
     * A group across hosts runs the dispatcher scope of a workload, on the hierarchical path; the
     * reason it cannot run {@code task}, or null.
     */
    private static @Nullable String refusedAcrossHosts(BenchTask task) {
        if (task.hasCollective() || !task.getScope().equals(BenchScope.DISPATCHER.name())) {
            return "bench: a group across hosts runs the dispatcher scope of a workload only (a"
                    + " collective or the transport scope needs one flat group: --transport tcp)";
        }
        return null;
    }

    private static HostBench.Result acrossHosts(BenchTask task, FormedGroup group) {
        return HostBench.hierarchical(
                BenchWorkload.named(task.getWorkload()),
                group.topology(),
                group.main(),
                group.hostGroup(),
                task.getWarmup(),
                task.getIters());
    }
}
