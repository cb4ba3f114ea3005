package moe.a2a.experts;

import moe.a2a.dispatch.DispatchHandle;
import moe.a2a.dispatch.DispatchLayout;
import moe.a2a.dispatch.DispatchPath;

/**
 * What a step's dispatches routed, sent and received, summed over its micro-batches: the counts
 * {@link RankStep.Computed} reports. Fresh arrays per step (the step's result keeps them). Owned by
 * the rank thread.
 */
final class DispatchCounts {
    long[] tokensPerRank = new long[0];
    long[] pairsPerRank = new long[0];
    long[] sentRowsTo = new long[0];
    long[] tokensPerExpert = new long[0];
    long[] recvRowsFrom = new long[0];
    int recvTokens;
    int dispatchRowBytes;
    int combineRowBytes;

    void clear(int worldSize, int experts) {
        tokensPerRank = new long[worldSize];
        pairsPerRank = new long[worldSize];
        sentRowsTo = new long[worldSize];
        tokensPerExpert = new long[experts];
        recvRowsFrom = new long[worldSize];
        recvTokens = 0;
    }

    /**
     * Adds one dispatch of {@code path}: dispatch moves full rows (payload, slots, weights),
     * combine tokens only.
     */
    void add(DispatchPath path, DispatchHandle handle) {
        DispatchLayout layout = path.layout();
        for (int r = 0; r < tokensPerRank.length; r++) {
            tokensPerRank[r] += layout.tokensPerRank(r);
            pairsPerRank[r] += layout.pairsPerRank(r);
        }
        path.countRows(handle, sentRowsTo, recvRowsFrom);
        for (int e = 0; e < tokensPerExpert.length; e++) {
            tokensPerExpert[e] += layout.tokensPerExpert(e);
        }
        recvTokens += handle.numRecvTokens();
        dispatchRowBytes = handle.rowLayout().rowBytes();
        combineRowBytes = handle.rowLayout().combineRowBytes();
    }
}
