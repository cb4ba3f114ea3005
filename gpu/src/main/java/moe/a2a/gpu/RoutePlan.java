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

    private final Placement placement;
    private final int rank;
    private final int topK;
    private final int[] rowsPerSlot;
    private int[] grouped = new int[0];
    private float[] groupedWeight = new float[0];
    private int[] start = new int[1];
    private int[] row = new int[0];
    private float[] weight = new float[0];
    private int numGrouped;
    private int numRecv;

    RoutePlan(Placement placement, int rank, int topK) {
        this.placement = placement;
        this.rank = rank;
        this.topK = topK;
        this.rowsPerSlot = new int[placement.localExperts(rank)];
    }

    /** Bytes of routing per sent row. */
    int routeRowBytes() {
        return topK * ROUTE_BYTES;
    }

    /**
     * Writes the routes of the rows {@code layout} sends to {@code peer}, in its pack order, at
     * {@code at}.
     */
    void writeRoutes(
            DispatchLayout layout,
            int peer,
            ByteBuffer dst,
            int at,
            int[] topkIds,
            float[] topkWeights) {
        int pos = at;
        for (int i = layout.rankOffsets(peer); i < layout.rankOffsets(peer + 1); i++) {
            int t = layout.packOrder(i);
            for (int k = 0; k < topK; k++) {
                int expert = topkIds[t * topK + k];
                dst.putInt(pos, placement.rankOf(expert) == peer ? placement.slotOf(expert) : -1);
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
        int[] cursor = new int[rowsPerSlot.length];
        for (int slot = 1; slot < rowsPerSlot.length; slot++) {
            cursor[slot] = cursor[slot - 1] + rowsPerSlot[slot - 1];
        }
        numGrouped = Arrays.stream(rowsPerSlot).sum();
        grouped = grow(grouped, numGrouped);
        groupedWeight = numGrouped > groupedWeight.length ? new float[numGrouped] : groupedWeight;
        for (int j = 0; j < numRecv; j++) {
            for (int k = 0; k < topK; k++) {
                int slot = routes.getInt(j * routeRow + k * ROUTE_BYTES);
                if (slot >= 0) {
                    int i = cursor[slot]++;
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
        int[] fill = Arrays.copyOf(start, numRecv);
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

    /** The send order of {@code layout}'s rows: token index per packed row. */
    static int[] packOrder(DispatchLayout layout) {
        int total = layout.rankOffsets(layout.worldSize());
        int[] order = new int[total];
        for (int i = 0; i < total; i++) {
            order[i] = layout.packOrder(i);
        }
        return order;
    }

    /**
     * For each token, the rows that come back to it in combine, in rank order (as the CPU path sums
     * them): rank {@code r}'s rows return in its pack order, from its offset. Fills {@code start}
     * ({@code T + 1} entries) and returns the row indexes.
     */
    static int[] returnedRows(DispatchLayout layout, int[] start) {
        int worldSize = layout.worldSize();
        int tokens = layout.numTokens();
        int[] cursor = new int[worldSize];
        for (int r = 0; r < worldSize; r++) {
            cursor[r] = layout.rankOffsets(r);
        }
        int[] index = new int[layout.rankOffsets(worldSize)];
        int n = 0;
        for (int t = 0; t < tokens; t++) {
            start[t] = n;
            for (int r = 0; r < worldSize; r++) {
                if (layout.tokenInRank(t, r)) {
                    index[n++] = cursor[r]++;
                }
            }
        }
        start[tokens] = n;
        return index;
    }

    private static int[] grow(int[] a, int n) {
        return a.length >= n ? a : new int[n];
    }
}
