package moe.a2a.experts;

import java.nio.ByteBuffer;
import java.util.Arrays;
import moe.a2a.dispatch.CapacityFilter;
import moe.a2a.kernels.DType;

/**
 * One rank's step, the same skeleton on every device: route the home tokens (the model's gate or
 * the routing given, then the rank's share of expert capacity), hand them to the device's {@link
 * Compute} (dispatch, experts, combine), and measure what the step did: tokens per rank and per
 * expert, drops, bytes to and from each peer, stage times. Owned by the rank thread.
 */
public final class RankStep {
    private static final int[] NO_IDS = new int[0];

    /** What a device does with a step's routed tokens: dispatch, run the experts, combine. */
    @FunctionalInterface
    public interface Compute {
        /**
         * @param ids {@code [T, K]} expert ids, {@link CapacityFilter#DROPPED} for pairs over
         *     capacity
         */
        Computed run(
                int layer,
                DType dtype,
                ByteBuffer tokens,
                int numTokens,
                int[] ids,
                float[] weights);
    }

    /**
     * What the device did with a step.
     *
     * @param output {@code [T, H]} in the step's dtype, little-endian; valid until the next step
     * @param tokensPerRank tokens routed to each rank in dispatch (to its experts)
     * @param pairsPerRank token×k assignments routed to each rank
     * @param sentRowsTo rows sent to each rank in dispatch, as they crossed the data plane: the
     *     tokens routed there on a flat path; on a hierarchical one, rows for its host's ranks and
     *     forwards to its rail's peers
     * @param tokensPerExpert token×k assignments per expert
     * @param recvRowsFrom rows received from each rank in dispatch
     * @param dispatchRowBytes bytes of one row sent in dispatch (payload and routing)
     * @param combineRowBytes bytes of one row returned in combine
     */
    public record Computed(
            ByteBuffer output,
            long[] tokensPerRank,
            long[] pairsPerRank,
            long[] sentRowsTo,
            long[] tokensPerExpert,
            long[] recvRowsFrom,
            int recvTokens,
            int dispatchRowBytes,
            int combineRowBytes,
            long dispatchNs,
            long expertNs,
            long combineNs) {}

    private final int rank;
    private final int topK;
    private final TokenRouter router;
    private final CapacityFilter capacity;

    /** Whether results carry the routed ids (a copy per step, so only while a trace records). */
    private volatile boolean recordRouting;

    public RankStep(WeightSource weights, ModelConfig model, int rank) {
        this.rank = rank;
        this.topK = model.topK();
        this.router = new TokenRouter(weights, model.topK());
        this.capacity = new CapacityFilter(model.experts());
    }

    /** See {@link RankRuntime#recordRouting}. */
    public void recordRouting() {
        recordRouting = true;
    }

    /** Runs one step on {@code compute}; arguments as {@link RankRuntime#step}. */
    public RankStepResult run(
            int layer,
            DType dtype,
            ByteBuffer tokens,
            int numTokens,
            RoutingInput routing,
            int capacityShare,
            Compute compute) {
        long t0 = System.nanoTime();
        router.route(layer, dtype, tokens, numTokens, routing);
        int[] ids = capacity.apply(router.ids(), router.weights(), numTokens, topK, capacityShare);
        long t1 = System.nanoTime();
        Computed c = compute.run(layer, dtype, tokens, numTokens, ids, router.weights());

        long[] perRank = c.tokensPerRank();
        long[] out = c.sentRowsTo();
        long[] sent = new long[perRank.length];
        long[] received = new long[perRank.length];
        for (int r = 0; r < perRank.length; r++) {
            if (r != rank) {
                long in = c.recvRowsFrom()[r];
                sent[r] = out[r] * c.dispatchRowBytes() + in * c.combineRowBytes();
                received[r] = in * c.dispatchRowBytes() + out[r] * c.combineRowBytes();
            }
        }
        return new RankStepResult(
                c.output(),
                perRank,
                c.pairsPerRank(),
                c.tokensPerExpert(),
                capacity.droppedPerExpert(),
                c.recvTokens(),
                sent,
                received,
                t1 - t0,
                c.dispatchNs(),
                c.expertNs(),
                c.combineNs(),
                recordRouting ? Arrays.copyOf(router.ids(), numTokens * topK) : NO_IDS);
    }
}
