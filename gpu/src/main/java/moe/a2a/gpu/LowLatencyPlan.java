package moe.a2a.gpu;

import java.nio.ByteBuffer;
import moe.a2a.dispatch.DispatchLayout;
import moe.a2a.dispatch.Placement;

/**
 * The host side of {@link GpuLowLatencyDispatcher}: every size fixed by the bound {@code T}, so a
 * captured step replays on new tokens. Each source has a region of {@link #regionRows} rows on each
 * destination: {@code T} row slots, then a header of {@link #headerRows} rows holding the valid
 * count, and per slot and choice the destination's local expert slot (-1 elsewhere) and the weight.
 * The receiver groups what arrived by reading the headers on the device ({@code ll_group}); only
 * what the source knows is planned here: the pack into regions, the headers, and where each token's
 * rows come back. Pure Java, tested without a GPU. Reused per step; owned by the rank's thread.
 */
final class LowLatencyPlan {
    private final int worldSize;
    private final int bound;
    private final int topK;
    private final int rowBytes;
    private final int headerRows;
    private final DispatchLayout layout;
    private final int[] pack;
    private final int[] returnedStart;
    private final int[] returned;

    /** Per token and destination, the slot the token took in its region there. */
    private final int[] slot;

    /**
     * @param bound the most tokens a step of this rank may hold ({@code --ll-max-tokens})
     * @param rowBytes bytes of one token row (bf16)
     */
    LowLatencyPlan(Placement placement, int rank, int topK, int bound, int rowBytes) {
        if (bound <= 0) {
            throw new IllegalArgumentException("bound: " + bound + " (expected: > 0)");
        }
        this.worldSize = placement.worldSize();
        this.bound = bound;
        this.topK = topK;
        this.rowBytes = rowBytes;
        this.headerRows = (headerBytes(bound, topK) + rowBytes - 1) / rowBytes;
        this.layout = new DispatchLayout(placement, rank);
        this.pack = new int[worldSize * regionRows()];
        this.returnedStart = new int[bound + 1];
        this.returned = new int[bound * worldSize];
        this.slot = new int[bound * worldSize];
    }

    /**
     * Bytes of a region's header: the count, then {@code T * K} slots and {@code T * K} weights.
     */
    static int headerBytes(int bound, int topK) {
        return Integer.BYTES * (1 + 2 * bound * topK);
    }

    int bound() {
        return bound;
    }

    int worldSize() {
        return worldSize;
    }

    /** Rows of the header that follows a region's {@code T} row slots. */
    int headerRows() {
        return headerRows;
    }

    /** Rows of one source's region on one destination: {@code T} slots and the header. */
    int regionRows() {
        return bound + headerRows;
    }

    /**
     * Rows of the staged input: the {@code T} token rows, then every destination's header ({@link
     * #headerRows} rows each), which the pack copies into the regions with the tokens.
     */
    int stagedRows() {
        return bound + worldSize * headerRows;
    }

    /** The source-side layout of the last {@link #plan}. */
    DispatchLayout layout() {
        return layout;
    }

    /**
     * Plans a step of {@code numTokens} tokens routed by {@code topkIds}/{@code topkWeights}: the
     * layout, the pack order ({@link #packOrder}), each destination's header written into {@code
     * staged} (the staged input, row {@code T} on), and the rows that come back ({@link
     * #returnedRows}).
     *
     * @throws IllegalArgumentException when {@code numTokens} exceeds the bound
     */
    void plan(ByteBuffer staged, int numTokens, int[] topkIds, float[] topkWeights) {
        if (numTokens < 0 || numTokens > bound) {
            throw new IllegalArgumentException(
                    "numTokens: " + numTokens + " (expected: 0.." + bound + ", the bound)");
        }
        layout.compute(topkIds, numTokens, topK);
        int regionRows = regionRows();
        for (int d = 0; d < worldSize; d++) {
            int first = layout.rankOffsets(d);
            int count = layout.rankOffsets(d + 1) - first;
            int region = d * regionRows;
            int header = (bound + d * headerRows) * rowBytes;
            staged.putInt(header, count);
            for (int j = 0; j < bound; j++) {
                // slots past the count carry row 0: bytes the receiver never reads
                pack[region + j] = j < count ? layout.packOrder(first + j) : 0;
            }
            for (int h = 0; h < headerRows; h++) {
                pack[region + bound + h] = bound + d * headerRows + h;
            }
            for (int j = 0; j < count; j++) {
                int t = layout.packOrder(first + j);
                slot[t * worldSize + d] = j;
                for (int k = 0; k < topK; k++) {
                    int a = t * topK + k;
                    int at = header + Integer.BYTES * (1 + j * topK + k);
                    staged.putInt(at, layout.chosenRank(a) == d ? layout.chosenSlot(a) : -1);
                    staged.putFloat(at + Integer.BYTES * bound * topK, topkWeights[a]);
                }
            }
        }
        planReturns(numTokens);
    }

    /**
     * Token {@code t}'s returned rows, in rank order (as the CPU path sums them): row {@code d * T
     * + j} of the combine's receive buffer for the slot {@code j} it took on rank {@code d}. Tokens
     * past the step's count get none.
     */
    private void planReturns(int numTokens) {
        int n = 0;
        for (int t = 0; t < bound; t++) {
            returnedStart[t] = n;
            if (t >= numTokens) {
                continue;
            }
            for (int d = 0; d < worldSize; d++) {
                if (layout.tokenInRank(t, d)) {
                    returned[n++] = d * bound + slot[t * worldSize + d];
                }
            }
        }
        returnedStart[bound] = n;
    }

    /**
     * Staged row of each row of the send regions: region {@code d} (at {@code d * regionRows}) has
     * the tokens sent to {@code d} in slot order, then {@code d}'s header rows.
     */
    int[] packOrder() {
        return pack;
    }

    /** Starts of each token's entries in {@link #returnedRows} ({@code T + 1} of them). */
    int[] returnedStart() {
        return returnedStart;
    }

    /**
     * Rows of the combine's receive buffer each token sums, as {@link #returnedStart} cuts them.
     */
    int[] returnedRows() {
        return returned;
    }
}
