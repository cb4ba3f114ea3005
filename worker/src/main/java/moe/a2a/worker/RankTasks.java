package moe.a2a.worker;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.experts.RankStepResult;
import moe.a2a.kernels.DType;
import moe.a2a.metrics.StepStatsSnapshot;
import moe.a2a.protocol.TaskCodec;
import moe.a2a.protocol.TensorCodec;
import moe.a2a.v1.StepTask;
import moe.a2a.v1.WorkerMessage;
import org.jspecify.annotations.Nullable;

/**
 * Runs a worker's share of steps on its formed group, answers each on the session, and records each
 * step in the rank's meters. A failure (running out of memory included) aborts the communicator, so
 * that the peers waiting on this rank fail at once instead of at their exchange timeout where the
 * transport carries the abort to them (TCP, shared memory); NCCL cannot, and its peers fail at
 * their deadline. Owned by the worker's data-plane thread, like the staging buffer it reuses across
 * steps.
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
            if (task.getRecordRouting()) {
                loaded.runtime().recordRouting();
            }
            long[] dispatchWaited = group.waitedNanos(ExchangePhase.DISPATCH);
            long[] combineWaited = group.waitedNanos(ExchangePhase.COMBINE);
            RankStepResult r =
                    loaded.runtime()
                            .step(
                                    task.getLayer(),
                                    dtype,
                                    tokens.clear(),
                                    n,
                                    TaskCodec.routing(task, n),
                                    TaskCodec.capacity(task),
                                    TaskCodec.lowLatencyTokens(task));
            int bytes = n * loaded.model().hidden() * dtype.sizeBytes();
            sender.send(
                    WorkerMessage.newBuilder()
                            .setResult(
                                    TaskCodec.stepResult(
                                            task.getStepId(),
                                            r,
                                            bytes,
                                            task.getRecordRouting(),
                                            since(dispatchWaited, ExchangePhase.DISPATCH, group),
                                            since(combineWaited, ExchangePhase.COMBINE, group)))
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
                                    remoteOf(r.tokensPerRank(), loaded.rank()),
                                    r.pairsPerRank(),
                                    r.tokensPerExpert(),
                                    r.droppedPerExpert(),
                                    sent,
                                    received,
                                    r.routeNs(),
                                    r.dispatchNs(),
                                    r.expertNs(),
                                    r.combineNs(),
                                    task.getLlMaxTokens() > 0),
                            NO_QUEUE);
        } catch (RuntimeException | OutOfMemoryError e) {
            // a step too big for this JVM's heap or direct memory fails like any other: its
            // buffers are garbage now, and the worker serves the next one
            group.abort(e);
            sender.send(
                    TaskCodec.stepFailure(
                            task.getStepId(), why(e), group.failedPeer(e, loaded.rank())));
            loaded.metrics().onStepFailed(e, task.getNumTokens());
        }
    }

    private static String why(Throwable failure) {
        return failure instanceof OutOfMemoryError
                ? "out of memory for a step of this size (" + failure.getMessage() + ")"
                : failure.getMessage();
    }

    /** The time waited for each rank in {@code phase} since {@code before}; null if unmeasured. */
    private static long @Nullable [] since(
            long @Nullable [] before, ExchangePhase phase, FormedGroup group) {
        long[] now = group.waitedNanos(phase);
        if (before == null || now == null) {
            return null;
        }
        for (int p = 0; p < now.length; p++) {
            now[p] -= before[p];
        }
        return now;
    }

    /** Of the tokens {@code rank} sent to each rank, those that crossed to another. */
    private static long[] remoteOf(long[] tokensPerRank, int rank) {
        long[] remote = tokensPerRank.clone();
        remote[rank] = 0;
        return remote;
    }
}
