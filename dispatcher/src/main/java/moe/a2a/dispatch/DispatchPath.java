package moe.a2a.dispatch;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;

/**
 * One rank's way of moving its tokens to their experts and the experts' outputs back: straight to
 * every rank ({@link Dispatcher}) or through one rank of each host ({@link
 * HierarchicalDispatcher}). Every rank of the group calls each method in the same step.
 */
public interface DispatchPath {
    /**
     * Dispatches {@code numTokens} tokens ({@code [T, H]} rows of {@code dtype}, little-endian)
     * routed by {@code topkIds}/{@code topkWeights} ({@code [T, K]}); returns this rank's rows
     * grouped by local expert.
     */
    DispatchResult dispatch(
            ByteBuffer tokens, int numTokens, DType dtype, int[] topkIds, float[] topkWeights);

    /**
     * The buffer the experts write their weighted sums into: one row per received token, in receive
     * order, in the dispatch's dtype. Valid until the next combine.
     */
    ByteBuffer combineRows(DispatchHandle handle);

    /**
     * Sends the rows written into {@link #combineRows} back and sums every token's rows into {@code
     * out} ({@code [T, H]} fp32, off-heap).
     */
    void combine(DispatchHandle handle, FloatBuffer out);
}
