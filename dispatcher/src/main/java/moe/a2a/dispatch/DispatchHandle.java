package moe.a2a.dispatch;

/**
 * What combine needs to reverse one dispatch: the source side's layout (where each packed row came
 * from), how many rows arrived from each source rank, and for each local expert the received rows
 * it must process and their weights:
 *
 * <pre>
 *   expertRows:    | rows for slot 0 | rows for slot 1 | ... |   (indexes into the receive buffer)
 *   expertWeights: | weights, same order                     |
 *                  ^ expertOffsets(0) ^ expertOffsets(1)       ^ expertOffsets(L) = total
 * </pre>
 *
 * <p>Reused by its {@link Dispatcher}: valid until that dispatcher's next dispatch. Owned by the
 * rank thread.
 */
public final class DispatchHandle {
    final DispatchLayout layout;
    final long[] recvRowsPerRank;
    final int[] expertOffsets;
    int[] expertRows = new int[0];
    float[] expertWeights = new float[0];
    DispatchRowLayout rowLayout;
    int numRecvTokens;

    /**
     * Received row indices in use, gaps included: {@link #numRecvTokens} in a normal dispatch,
     * every source's fixed region in a low-latency one.
     */
    int recvRowSpan;

    /** The received row index of each source's first row. */
    final int[] recvRunStart;

    long step;

    DispatchHandle(DispatchLayout layout, int worldSize, int localExperts) {
        this.layout = layout;
        this.recvRowsPerRank = new long[worldSize];
        this.recvRunStart = new int[worldSize];
        this.expertOffsets = new int[localExperts + 1];
    }

    /** The dispatcher's sequence number of this dispatch, the same on every rank. */
    public long step() {
        return step;
    }

    /** The source-side layout of this dispatch. */
    public DispatchLayout layout() {
        return layout;
    }

    /** The dtype and row shape this dispatch moved. */
    public DispatchRowLayout rowLayout() {
        return rowLayout;
    }

    /** Tokens this rank received, all sources together (each once, deduplicated). */
    public int numRecvTokens() {
        return numRecvTokens;
    }

    /** The ranks rows can come from: the group's size. */
    public int sources() {
        return recvRowsPerRank.length;
    }

    /** Rows this rank received from {@code rank}. */
    public long recvRowsFrom(int rank) {
        return recvRowsPerRank[rank];
    }

    /**
     * The received row index of row {@code i} of those from {@code source}: consecutive across
     * sources in a normal dispatch; in a low-latency one each source's rows start its fixed region.
     */
    public int recvRowIndex(int source, int i) {
        return recvRunStart[source] + i;
    }

    /**
     * Received row indices in use, gaps between low-latency regions included: what {@link
     * ExpertSums} writes and combine sends back.
     */
    public int recvRowSpan() {
        return recvRowSpan;
    }

    /** Number of local expert slots. */
    public int localExperts() {
        return expertOffsets.length - 1;
    }

    /** Token×k assignments this rank received for local expert {@code slot}. */
    public int recvTokensPerLocalExpert(int slot) {
        return expertOffsets[slot + 1] - expertOffsets[slot];
    }

    /**
     * Exclusive prefix sum of {@link #recvTokensPerLocalExpert}: where {@code slot}'s rows start.
     */
    public int expertOffsets(int slot) {
        return expertOffsets[slot];
    }

    /** The received row processed at grouped position {@code index}. */
    public int expertRow(int index) {
        return expertRows[index];
    }

    /** The combine weight at grouped position {@code index}. */
    public float expertWeight(int index) {
        return expertWeights[index];
    }
}
