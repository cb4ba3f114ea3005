package moe.a2a.control.cluster;

/**
 * What one step did, all ranks together: counts summed, stage times the max over ranks (the
 * critical path). Immutable.
 *
 * @param tokensPerRank tokens each rank received in dispatch (deduplicated)
 * @param tokensPerExpert token×k assignments per logical expert
 */
public record StepStatsSnapshot(
        long stepId,
        int layer,
        int requests,
        long tokens,
        long[] tokensPerRank,
        long[] tokensPerExpert,
        long routeNs,
        long dispatchNs,
        long expertNs,
        long combineNs) {}
