package moe.a2a.dispatch;

import java.util.Arrays;

/**
 * Where each token of one rank goes in dispatch: per destination rank, the tokens to send (a token
 * whose chosen experts share a rank is sent there once), and per expert, the token×k assignments
 * routed to it. The pack order lists, for each destination in rank order, its tokens in token
 * order:
 *
 * <pre>
 *   packOrder: | tokens for rank 0 | tokens for rank 1 | ... | tokens for rank N-1 |
 *              ^ rankOffsets[0]    ^ rankOffsets[1]          ^ rankOffsets[N-1]    ^ rankOffsets[N]
 * </pre>
 *
 * <p>Reusable: {@link #compute} overwrites the previous layout and grows its arrays only when a
 * step is larger than any before. Owned by one rank thread.
 */
public final class DispatchLayout {
    private final Placement placement;
    private final int worldSize;
    private final long[] tokensPerRank;
    private final long[] tokensPerExpert;
    private final int[] rankOffsets;
    private boolean[] tokenInRank = new boolean[0];
    private int[] packOrder = new int[0];
    private int numTokens;

    public DispatchLayout(Placement placement) {
        this.placement = placement;
        this.worldSize = placement.worldSize();
        this.tokensPerRank = new long[worldSize];
        this.tokensPerExpert = new long[placement.numExperts()];
        this.rankOffsets = new int[worldSize + 1];
    }

    /**
     * Computes the layout of {@code numTokens} tokens routed by {@code topkIds} ({@code [T, K]}).
     */
    public void compute(int[] topkIds, int numTokens, int topK) {
        this.numTokens = numTokens;
        if (tokenInRank.length < numTokens * worldSize) {
            tokenInRank = new boolean[numTokens * worldSize];
        }
        Arrays.fill(tokenInRank, 0, numTokens * worldSize, false);
        Arrays.fill(tokensPerRank, 0);
        Arrays.fill(tokensPerExpert, 0);
        for (int t = 0; t < numTokens; t++) {
            for (int k = 0; k < topK; k++) {
                final int expert = topkIds[t * topK + k];
                tokensPerExpert[expert]++;
                final int cell = t * worldSize + placement.rankOf(expert);
                if (!tokenInRank[cell]) {
                    tokenInRank[cell] = true;
                    tokensPerRank[cell - t * worldSize]++;
                }
            }
        }
        rankOffsets[0] = 0;
        for (int r = 0; r < worldSize; r++) {
            rankOffsets[r + 1] = rankOffsets[r] + (int) tokensPerRank[r];
        }
        final int total = rankOffsets[worldSize];
        if (packOrder.length < total) {
            packOrder = new int[total];
        }
        for (int r = 0; r < worldSize; r++) {
            int next = rankOffsets[r];
            for (int t = 0; t < numTokens; t++) {
                if (tokenInRank[t * worldSize + r]) {
                    packOrder[next++] = t;
                }
            }
        }
    }

    public int numTokens() {
        return numTokens;
    }

    public int worldSize() {
        return worldSize;
    }

    /** Tokens sent to {@code rank} (deduplicated). */
    public long tokensPerRank(int rank) {
        return tokensPerRank[rank];
    }

    /**
     * A copy of {@link #tokensPerRank(int)} for every rank, for results that outlive the layout.
     */
    public long[] tokensPerRankCopy() {
        return tokensPerRank.clone();
    }

    /**
     * A copy of {@link #tokensPerExpert(int)} for every expert, for results that outlive the
     * layout.
     */
    public long[] tokensPerExpertCopy() {
        return tokensPerExpert.clone();
    }

    /** Token×k assignments routed to {@code expert}. */
    public long tokensPerExpert(int expert) {
        return tokensPerExpert[expert];
    }

    /** Whether {@code token} goes to {@code rank}. */
    public boolean tokenInRank(int token, int rank) {
        return tokenInRank[token * worldSize + rank];
    }

    /** Exclusive prefix sum of {@link #tokensPerRank}; {@code rankOffsets(N)} is the total. */
    public int rankOffsets(int rank) {
        return rankOffsets[rank];
    }

    /** The token packed at position {@code index} of the send order. */
    public int packOrder(int index) {
        return packOrder[index];
    }
}
