package moe.a2a.control.cluster;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import moe.a2a.experts.RankStepResult;

/**
 * A step submitted to the ranks and not yet answered.
 *
 * @param rankStart each rank's first row of the batch, then the batch's row count
 * @param rowBytes one token row's bytes
 * @param placementVersion the layer's placement version when the step started
 * @param lowLatency whether the step exchanges in low-latency mode
 */
record StepInFlight(
        long stepId,
        List<ForwardJob> batch,
        int[] rankStart,
        int rowBytes,
        long placementVersion,
        long startNanos,
        boolean lowLatency,
        CompletableFuture<RankStepResult[]> results) {}
