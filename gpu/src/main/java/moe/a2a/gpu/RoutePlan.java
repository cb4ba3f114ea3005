package moe.a2a.gpu;

import java.nio.ByteBuffer;
import java.util.Arrays;
import moe.a2a.comm.A2aException;
import moe.a2a.dispatch.DispatchLayout;
import moe.a2a.dispatch.Placement;

/**
 * The host side of {@link GpuDispatcher}: which rows the kernels move where, in the CPU path's
 * order. Every sent row carries, per choice, the destination's local slot (-1 elsewhere) and the
 * weight ({@link #writeRoutes}); from the received routes come the grouping by local expert (each
 * slot's rows in receive order) and, per received token, its grouped rows and weights in ascending
 * order — the order in which the CPU path adds them ({@link #group}). Pure Java: tested without a
 * GPU. Reused per step; owned by the rank's thread.
 */
final class RoutePlan {
    /** Per choice: an int slot and a float weight. */
    static final int ROUTE_BYTES = Integer.BYTES + Float.BYTES;

    private final int rank;
    private final int topK;
    private final int[] rowsPerSlot;
    private final int[] slotCursor;
    private final int[] rankCursor;
    private int[] grouped = new int[0];
    private float[] groupedWeight = new float[0];
    private int[] start = new int[1];
    private int[] row = new int[0];
    private float[] weight = new float[0];
    private int[] fill = new int[0];
    private int[] pack = new int[0];
    private int[] returned = new int[0];
    private int[] returnedStart = new int[1];
    private int numGrouped;
    private int numRecv;

    RoutePlan(Placement placement, int rank, int topK) {
        this.rank = rank;
        this.topK = topK;
        this.rowsPerSlot = new int[placement.localExperts(rank)];
        this.slotCursor = new int[rowsPerSlot.length];
        this.rankCursor = new int[placement.worldSize()];
    }

    /** Bytes of routing per sent row. */
    int routeRowBytes() {
        return topK * ROUTE_BYTES;
    }

    /**
     * Writes the routes of the rows {@code layout} sends to {@code peer}, in its pack order, at
     * {@code at}.
     */
    void writeRoutes(DispatchLayout layout, int peer, ByteBuffer dst, int at, float[] topkWeights) {
        int pos = at;
        for (int i = layout.rankOffsets(peer); i < layout.rankOffsets(peer + 1); i++) {
            int t = layout.packOrder(i);
            for (int k = 0; k < topK; k++) {
                int assignment = t * topK + k;
                dst.putInt(
                        pos,
                        layout.chosenRank(assignment) == peer ? layout.chosenSlot(assignment) : -1);
                dst.putFloat(pos + Integer.BYTES, topkWeights[t * topK + k]);
                pos += ROUTE_BYTES;
            }
        }
    }

    /**
     * Plans the grouping and combine from {@code numRecv} received routes; returns the grouped
     * rows.
     */
    int group(ByteBuffer routes, int numRecv) {
        this.numRecv = numRecv;
        int routeRow = routeRowBytes();
        Arrays.fill(rowsPerSlot, 0);
        for (int j = 0; j < numRecv; j++) {
            for (int k = 0; k < topK; k++) {
                int slot = routes.getInt(j * routeRow + k * ROUTE_BYTES);
                if (slot >= rowsPerSlot.length) {
                    throw new A2aException(
                            "received route names a slot this rank lacks: rank="
                                    + rank
                                    + ", row="
                                    + j
                                    + ", slot="
                                    + slot
                                    + ", localExperts="
                                    + rowsPerSlot.length);
                }
                if (slot >= 0) {
                    rowsPerSlot[slot]++;
                }
            }
        }
        numGrouped = 0;
        for (int slot = 0; slot < rowsPerSlot.length; slot++) {
            slotCursor[slot] = numGrouped;
            numGrouped += rowsPerSlot[slot];
        }
        grouped = grow(grouped, numGrouped);
        groupedWeight = numGrouped > groupedWeight.length ? new float[numGrouped] : groupedWeight;
        for (int j = 0; j < numRecv; j++) {
            for (int k = 0; k < topK; k++) {
                int slot = routes.getInt(j * routeRow + k * ROUTE_BYTES);
                if (slot >= 0) {
                    int i = slotCursor[slot]++;
                    grouped[i] = j;
                    groupedWeight[i] =
                            routes.getFloat(j * routeRow + k * ROUTE_BYTES + Integer.BYTES);
                }
            }
        }
        start = grow(start, numRecv + 1);
        Arrays.fill(start, 0, numRecv + 1, 0);
        for (int i = 0; i < numGrouped; i++) {
            start[grouped[i] + 1]++;
        }
        for (int j = 0; j < numRecv; j++) {
            start[j + 1] += start[j];
        }
        row = grow(row, numGrouped);
        weight = numGrouped > weight.length ? new float[numGrouped] : weight;
        fill = grow(fill, numRecv);
        System.arraycopy(start, 0, fill, 0, numRecv);
        for (int i = 0; i < numGrouped; i++) {
            int at = fill[grouped[i]]++;
            row[at] = i;
            weight[at] = groupedWeight[i];
        }
        return numGrouped;
    }

    /**
     * Received row of each grouped position: slot 0's rows, then slot 1's, each in receive order.
     */
    int[] groupedOrder() {
        return grouped;
    }

    int[] rowsPerSlot() {
        return rowsPerSlot;
    }

    int numGrouped() {
        return numGrouped;
    }

    int numReceived() {
        return numRecv;
    }

    /**
     * Received token {@code j}'s entries are {@code [start[j], start[j+1])} of {@link
     * #combineRow}/{@link #combineWeight}.
     */
    int[] combineStart() {
        return start;
    }

    /** Grouped positions, ascending per received token. */
    int[] combineRow() {
        return row;
    }

    float[] combineWeight() {
        return weight;
    }

    /**
     * The send order of {@code layout}'s rows: token index per packed row (reused array, may be
     * longer).
     */
    int[] packOrder(DispatchLayout layout) {
        int total = layout.rankOffsets(layout.worldSize());
        pack = grow(pack, total);
        for (int i = 0; i < total; i++) {
            pack[i] = layout.packOrder(i);
        }
        return pack;
    }

    /**
     * For each token of {@code layout}, the rows that come back to it in combine, in rank order (as
     * the CPU path sums them): rank {@code r}'s rows return in its pack order, from its offset.
     * Returns the row indexes; token {@code t}'s are at {@code [returnedStart()[t],
     * returnedStart()[t+1])}. Reused arrays, possibly longer than needed.
     */
    int[] returnedRows(DispatchLayout layout) {
        int worldSize = layout.worldSize();
        int tokens = layout.numTokens();
        for (int r = 0; r < worldSize; r++) {
            rankCursor[r] = layout.rankOffsets(r);
        }
        returned = grow(returned, layout.rankOffsets(worldSize));
        returnedStart = grow(returnedStart, tokens + 1);
        int n = 0;
        for (int t = 0; t < tokens; t++) {
            returnedStart[t] = n;
            for (int r = 0; r < worldSize; r++) {
                if (layout.tokenInRank(t, r)) {
                    returned[n++] = rankCursor[r]++;
                }
            }
        }
        returnedStart[tokens] = n;
        return returned;
    }

    /**
     * Starts of each token's entries in {@link #returnedRows}'s last answer ({@code T + 1} of
     * them).
     */
    int[] returnedStart() {
        return returnedStart;
    }

    private static int[] grow(int[] a, int n) {
        return a.length >= n ? a : new int[n];
    }
}
