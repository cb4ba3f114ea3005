package moe.a2a.dispatch;

import java.nio.ByteBuffer;
import moe.a2a.comm.SegmentWriter;

/**
 * Packs one destination's rows where the transport asks: each token's payload, then for every
 * choice the destination's local slot (-1 when elsewhere) and the weight. Reused per dispatch.
 * Owned by the rank thread.
 */
final class RowPacker implements SegmentWriter {
    private final DispatchLayout layout;
    private final int topK;
    private final int worldSize;
    private final long[] cursor;
    private ByteBuffer tokens;
    private DispatchRowLayout row;
    private float[] weights;

    RowPacker(DispatchLayout layout, int topK, int worldSize) {
        this.layout = layout;
        this.topK = topK;
        this.worldSize = worldSize;
        this.cursor = new long[worldSize];
    }

    /** The step's tokens and weights; destinations and slots come from the layout. */
    void prepare(ByteBuffer tokens, DispatchRowLayout row, float[] weights) {
        this.tokens = tokens;
        this.row = row;
        this.weights = weights;
    }

    @Override
    public void write(int peer, ByteBuffer dst, int dstOffset) {
        int at = dstOffset;
        for (int i = layout.rankOffsets(peer); i < layout.rankOffsets(peer + 1); i++) {
            writeRow(layout.packOrder(i), peer, dst, at);
            at += row.rowBytes();
        }
    }

    /**
     * Token by token, each to every rank it visits: a token's row is read from memory once and
     * copied from the cache to its other destinations. Each destination still gets its rows in
     * token order, as {@link #write} packs them.
     */
    @Override
    public void writeAll(ByteBuffer[] dsts, long[] dstOffsets, long[] lengths) {
        System.arraycopy(dstOffsets, 0, cursor, 0, worldSize);
        final int rowBytes = row.rowBytes();
        final int numTokens = layout.numTokens();
        for (int t = 0; t < numTokens; t++) {
            for (int r = 0; r < worldSize; r++) {
                if (layout.tokenInRank(t, r)) {
                    writeRow(t, r, dsts[r], (int) cursor[r]);
                    cursor[r] += rowBytes;
                }
            }
        }
    }

    /** Token {@code t}'s payload, then for every choice its slot on {@code peer} and weight. */
    private void writeRow(int t, int peer, ByteBuffer dst, int at) {
        final int payloadBytes = row.payloadBytes();
        dst.put(at, tokens, t * payloadBytes, payloadBytes);
        for (int k = 0; k < topK; k++) {
            final int assignment = t * topK + k;
            final boolean here = layout.chosenRank(assignment) == peer;
            dst.putInt(at + row.slotOffset(k), here ? layout.chosenSlot(assignment) : -1);
            dst.putFloat(at + row.weightOffset(k), weights[assignment]);
        }
    }
}
