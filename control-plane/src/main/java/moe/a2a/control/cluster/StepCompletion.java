package moe.a2a.control.cluster;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import java.util.List;
import java.util.concurrent.ExecutionException;
import moe.a2a.experts.RankStepResult;
import moe.a2a.metrics.StepListener;
import moe.a2a.metrics.StepStatsSnapshot;
import org.jspecify.annotations.Nullable;

/**
 * Waits for a step and answers its requests: each gets exactly its rows, cut back out of whichever
 * ranks hold them, or the step's failure. The step's statistics go to the listener and the {@link
 * Rebalancer}, its routing to the {@link RoutingRecorder} when one records. Owned by the scheduler
 * thread.
 */
final class StepCompletion {
    private final RankGroup cluster;
    private final StepListener listener;
    private final Rebalancer rebalancer;
    private final @Nullable RoutingRecorder recorder;

    StepCompletion(
            RankGroup cluster,
            StepListener listener,
            Rebalancer rebalancer,
            @Nullable RoutingRecorder recorder) {
        this.cluster = cluster;
        this.listener = listener;
        this.rebalancer = rebalancer;
        this.recorder = recorder;
    }

    /**
     * Waits for the step and answers its requests, each with exactly its rows; if the step failed,
     * answers none and returns why (the scheduler decides what its requests get).
     */
    @Nullable Throwable finish(StepInFlight step) throws InterruptedException {
        RankStepResult[] results;
        try {
            results = step.results().get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            listener.onStepFailed(cause, step.rankStart()[step.rankStart().length - 1]);
            return cause;
        }
        List<ForwardJob> batch = step.batch();
        long total = step.rankStart()[step.rankStart().length - 1];
        StepStatsSnapshot stats =
                summarize(
                        step.stepId(),
                        batch.get(0).layer(),
                        step.placementVersion(),
                        batch.size(),
                        total,
                        results,
                        step.lowLatency());
        long[] queueNs = new long[batch.size()];
        int row = 0;
        for (int i = 0; i < batch.size(); i++) {
            ForwardJob job = batch.get(i);
            queueNs[i] = step.startNanos() - job.enqueuedNanos();
            ByteString output =
                    cut(results, step.rankStart(), row, job.numTokens(), step.rowBytes());
            row += job.numTokens();
            job.result().complete(new ForwardOutcome(output, stats, queueNs[i]));
        }
        listener.onStep(stats, queueNs);
        rebalancer.onStep(stats);
        if (recorder != null) {
            recorder.onStep(step.stepId(), stats.layer(), step.rankStart(), results);
        }
        return null;
    }

    /**
     * The request's rows {@code [from, from+count)} of the step output, from whichever ranks hold
     * them.
     */
    private static ByteString cut(
            RankStepResult[] results, int[] rankStart, int from, int count, int rowBytes) {
        byte[] out = new byte[count * rowBytes];
        for (int r = 0; r < results.length; r++) {
            int lo = Math.max(from, rankStart[r]);
            int hi = Math.min(from + count, rankStart[r + 1]);
            if (lo < hi) {
                results[r]
                        .output()
                        .get(
                                (lo - rankStart[r]) * rowBytes,
                                out,
                                (lo - from) * rowBytes,
                                (hi - lo) * rowBytes);
            }
        }
        return UnsafeByteOperations.unsafeWrap(out);
    }

    private StepStatsSnapshot summarize(
            long stepId,
            int layer,
            long placementVersion,
            int requests,
            long tokens,
            RankStepResult[] results,
            boolean lowLatency) {
        int n = results.length;
        long[] perRank = new long[n];
        long[] remotePerRank = new long[n];
        long[] pairsPerRank = new long[n];
        long[] perExpert = new long[cluster.model().experts()];
        long[] dropped = new long[cluster.model().experts()];
        long[][] sent = new long[n][];
        long[][] received = new long[n][];
        long route = 0;
        long dispatch = 0;
        long expert = 0;
        long combine = 0;
        for (int rank = 0; rank < n; rank++) {
            RankStepResult r = results[rank];
            sent[rank] = r.bytesSent();
            received[rank] = r.bytesReceived();
            for (int d = 0; d < n; d++) {
                perRank[d] += r.tokensPerRank()[d];
                remotePerRank[d] += d == rank ? 0 : r.tokensPerRank()[d];
                pairsPerRank[d] += r.pairsPerRank()[d];
            }
            for (int e = 0; e < perExpert.length; e++) {
                perExpert[e] += r.tokensPerExpert()[e];
                dropped[e] += r.droppedPerExpert()[e];
            }
            route = Math.max(route, r.routeNs());
            dispatch = Math.max(dispatch, r.dispatchNs());
            expert = Math.max(expert, r.expertNs());
            combine = Math.max(combine, r.combineNs());
        }
        return new StepStatsSnapshot(
                stepId,
                layer,
                placementVersion,
                requests,
                tokens,
                perRank,
                remotePerRank,
                pairsPerRank,
                perExpert,
                dropped,
                sent,
                received,
                route,
                dispatch,
                expert,
                combine,
                lowLatency);
    }
}
