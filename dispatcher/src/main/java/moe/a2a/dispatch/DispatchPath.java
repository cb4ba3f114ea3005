package moe.a2a.dispatch;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import moe.a2a.kernels.DType;

/**
 * One rank's way of moving its tokens to their experts and the experts' outputs back: straight to
 * every rank ({@link Dispatcher}) or through one rank of each host ({@link
 * HierarchicalDispatcher}). Every rank of the group calls each method in the same step.
 */
public interface DispatchPath {
    /**
     * Routes the next dispatches by {@code next}: another layer's placement, or one the coordinator
     * moved experts in. Its world size and this rank's number of slots are the ones in use.
     *
     * @throws IllegalArgumentException when {@code next} has another world size or number of slots
     *     on this rank
     */
    void use(Placement next);

    /** The ranks of the whole group. */
    int worldSize();

    /**
     * How the last dispatch routed this rank's tokens over the whole group: tokens per rank and per
     * expert, whichever way the rows travelled.
     */
    DispatchLayout layout();

    /**
     * Adds to {@code sentTo} and {@code receivedFrom} (one entry per rank of the group) the rows
     * the dispatch of {@code handle} sent to and received from each rank, as they crossed the data
     * plane; its combine moves as many rows back the other way.
     */
    default void countRows(DispatchHandle handle, long[] sentTo, long[] receivedFrom) {
        // flat: every rank's rows go straight to it
        for (int r = 0; r < worldSize(); r++) {
            sentTo[r] += handle.layout().tokensPerRank(r);
            receivedFrom[r] += handle.recvRowsFrom(r);
        }
    }

    /**
     * Dispatches {@code numTokens} tokens ({@code [T, H]} rows of {@code dtype}, little-endian)
     * routed by {@code topkIds}/{@code topkWeights} ({@code [T, K]}); returns this rank's rows
     * grouped by local expert.
     */
    DispatchResult dispatch(
            ByteBuffer tokens, int numTokens, DType dtype, int[] topkIds, float[] topkWeights);

    /**
     * The buffer the experts write their weighted sums into: one row per received row index ({@link
     * DispatchHandle#recvRowSpan}), in receive order, in the dispatch's dtype. Valid until the next
     * combine.
     */
    ByteBuffer combineRows(DispatchHandle handle);

    /**
     * Sends the rows written into {@link #combineRows} back and sums every token's rows into {@code
     * out} ({@code [T, H]} fp32, off-heap).
     */
    void combine(DispatchHandle handle, FloatBuffer out);
}
