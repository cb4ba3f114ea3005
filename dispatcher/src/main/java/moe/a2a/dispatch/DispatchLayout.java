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
 * <p>Replica choice, for an expert in several slots, is made per token ({@link ReplicaChoice}): the
 * replica on the tokens' home rank if it has one; otherwise a replica on a rank the token already
 * visits, while that replica is within 10 % of its share of the expert's assignments so far; else
 * the replica furthest behind its share. The choice depends on the step's routing alone: the same
 * input routes the same way.
 *
 * <p>Reusable: {@link #compute} overwrites the previous layout and grows its arrays only when a
 * step is larger than any before. Owned by one rank thread.
 */
public final class DispatchLayout {
    private Placement placement;
    private final ReplicaChoice choice;
    private final int worldSize;
    private final long[] tokensPerRank;
    private final long[] tokensPerExpert;
    private final long[] pairsPerRank;
    private final int[] rankOffsets;

    /** A chosen rank's mark, during {@link #compute}, for an assignment still to be spread. */
    private static final int SPREAD = -2;

    private boolean[] tokenInRank = new boolean[0];
    private int[] packOrder = new int[0];
    private int[] chosenRank = new int[0];
    private int[] chosenSlot = new int[0];
    private int numTokens;
    private int topK;

    /**
     * @param homeRank the rank whose tokens this layout routes (its replicas are preferred), or -1
     *     for none
     */
    public DispatchLayout(Placement placement, int homeRank) {
        this.placement = placement;
        this.choice = new ReplicaChoice(placement, homeRank);
        this.worldSize = placement.worldSize();
        this.tokensPerRank = new long[worldSize];
        this.tokensPerExpert = new long[placement.numExperts()];
        this.pairsPerRank = new long[worldSize];
        this.rankOffsets = new int[worldSize + 1];
    }

    /**
     * Routes later steps by {@code next}, as when the coordinator moved experts between steps.
     *
     * @throws IllegalArgumentException when {@code next} has another world size or expert count
     */
    public void use(Placement next) {
        if (next == placement) {
            return;
        }
        if (next.worldSize() != worldSize || next.numExperts() != placement.numExperts()) {
            throw new IllegalArgumentException(
                    "placement: "
                            + next.worldSize()
                            + " ranks, "
                            + next.numExperts()
                            + " experts (expected: "
                            + worldSize
                            + " ranks, "
                            + placement.numExperts()
                            + " experts, as before)");
        }
        this.placement = next;
        choice.use(next);
    }

    /**
     * Computes the layout of {@code numTokens} tokens routed by {@code topkIds} ({@code [T, K]});
     * an id of {@link CapacityFilter#DROPPED} goes nowhere (its chosen rank and slot are -1).
     */
    public void compute(int[] topkIds, int numTokens, int topK) {
        this.numTokens = numTokens;
        this.topK = topK;
        if (tokenInRank.length < numTokens * worldSize) {
            tokenInRank = new boolean[numTokens * worldSize];
        }
        Arrays.fill(tokenInRank, 0, numTokens * worldSize, false);
        Arrays.fill(tokensPerRank, 0);
        Arrays.fill(tokensPerExpert, 0);
        Arrays.fill(pairsPerRank, 0);
        choice.reset();
        if (chosenRank.length < numTokens * topK) {
            chosenRank = new int[numTokens * topK];
            chosenSlot = new int[numTokens * topK];
        }
        for (int t = 0; t < numTokens; t++) {
            boolean spread = false;
            for (int k = 0; k < topK; k++) {
                final int expert = topkIds[t * topK + k];
                if (expert == CapacityFilter.DROPPED) {
                    chosenRank[t * topK + k] = -1;
                    chosenSlot[t * topK + k] = -1;
                    continue;
                }
                tokensPerExpert[expert]++;
                choice.see(expert);
                final int replica = choice.forced(expert);
                if (replica >= 0) {
                    assign(t, k, expert, replica);
                } else {
                    chosenRank[t * topK + k] = SPREAD;
                    spread = true;
                }
            }
            for (int k = 0; spread && k < topK; k++) {
                if (chosenRank[t * topK + k] == SPREAD) {
                    final int expert = topkIds[t * topK + k];
                    assign(t, k, expert, choice.spread(expert, tokenInRank, t * worldSize));
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

    /** Sends assignment {@code k} of token {@code t} to {@code replica} of {@code expert}. */
    private void assign(int t, int k, int expert, int replica) {
        choice.took(expert, replica);
        final int rank = placement.replicaRank(expert, replica);
        pairsPerRank[rank]++;
        chosenRank[t * topK + k] = rank;
        chosenSlot[t * topK + k] = placement.replicaSlot(expert, replica);
        final int cell = t * worldSize + rank;
        if (!tokenInRank[cell]) {
            tokenInRank[cell] = true;
            tokensPerRank[rank]++;
        }
    }

    public int numTokens() {
        return numTokens;
    }

    /** The rank of the replica chosen for assignment {@code t * K + k} of the last step. */
    public int chosenRank(int assignment) {
        return chosenRank[assignment];
    }

    /** The slot, on {@link #chosenRank}, of the replica chosen for {@code assignment}. */
    public int chosenSlot(int assignment) {
        return chosenSlot[assignment];
    }

    public int worldSize() {
        return worldSize;
    }

    /** Tokens sent to {@code rank} (deduplicated). */
    public long tokensPerRank(int rank) {
        return tokensPerRank[rank];
    }

    /** Token×k assignments sent to {@code rank}: the (token, expert) pairs its experts compute. */
    public long pairsPerRank(int rank) {
        return pairsPerRank[rank];
    }

    /**
     * A copy of {@link #tokensPerRank(int)} for every rank, for results that outlive the layout.
     */
    public long[] tokensPerRankCopy() {
        return tokensPerRank.clone();
    }

    /** A copy of {@link #pairsPerRank(int)} for every rank, for results that outlive the layout. */
    public long[] pairsPerRankCopy() {
        return pairsPerRank.clone();
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
