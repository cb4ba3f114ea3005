package moe.a2a.experts;

import java.nio.ByteBuffer;

/**
 * What one rank's step produced: its tokens' layer output and the step's measurements on this rank.
 * {@code output} is reused by the rank: valid until its next step.
 *
 * @param output {@code [T, H]} in the step's dtype, little-endian, from index 0
 * @param tokensPerRank tokens this rank sent to each rank (deduplicated)
 * @param pairsPerRank token×k assignments of this rank's tokens sent to each rank
 * @param tokensPerExpert token×k assignments of this rank's tokens, per logical expert (those
 *     dropped over capacity excluded)
 * @param droppedPerExpert token×k assignments of this rank's tokens dropped over expert capacity,
 *     per logical expert
 * @param recvTokens tokens this rank received in dispatch
 * @param bytesSent bytes of rows this rank sent to each peer, dispatch and combine (0 to itself)
 * @param bytesReceived bytes of rows this rank received from each peer, dispatch and combine (0
 *     from itself)
 * @param routedIds {@code [T, K]} expert ids this rank's routing chose, before capacity drops
 *     (owned by the result; empty unless the rank records routing: {@link
 *     RankRuntime#recordRouting})
 */
public record RankStepResult(
        ByteBuffer output,
        long[] tokensPerRank,
        long[] pairsPerRank,
        long[] tokensPerExpert,
        long[] droppedPerExpert,
        int recvTokens,
        long[] bytesSent,
        long[] bytesReceived,
        long routeNs,
        long dispatchNs,
        long expertNs,
        long combineNs,
        int[] routedIds) {}
