package moe.a2a.metrics;

/**
 * What one step did, all ranks together: counts summed, stage times the max over ranks (the
 * critical path). Immutable.
 *
 * @param placementVersion the version of the expert placement the step ran with
 * @param tokensPerRank tokens each rank received in dispatch (deduplicated), its own included
 * @param remoteTokensPerRank of {@code tokensPerRank}, those from other ranks
 * @param pairsPerRank token×k assignments each rank's experts computed
 * @param tokensPerExpert token×k assignments per logical expert, those dropped over capacity
 *     excluded
 * @param droppedPerExpert token×k assignments per logical expert dropped over expert capacity
 * @param bytesSent {@code [rank][peer]} bytes of rows sent, both phases; a null row for a rank this
 *     process did not see (a worker sees only its own)
 * @param bytesReceived {@code [rank][peer]} bytes of rows received, as {@code bytesSent}
 * @param lowLatency whether the step exchanged in low-latency mode (fixed regions, no count
 *     exchange)
 */
public record StepStatsSnapshot(
        long stepId,
        int layer,
        long placementVersion,
        int requests,
        long tokens,
        long[] tokensPerRank,
        long[] remoteTokensPerRank,
        long[] pairsPerRank,
        long[] tokensPerExpert,
        long[] droppedPerExpert,
        long[][] bytesSent,
        long[][] bytesReceived,
        long routeNs,
        long dispatchNs,
        long expertNs,
        long combineNs,
        boolean lowLatency) {

    /** The mode's name in stats and metrics: {@code normal} or {@code low-latency}. */
    public String mode() {
        return lowLatency ? "low-latency" : "normal";
    }
}
