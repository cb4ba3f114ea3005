package moe.a2a.dispatch;

import java.nio.ByteBuffer;
import java.util.Arrays;
import moe.a2a.comm.A2aException;

/**
 * Groups the rows a dispatch received by local expert, into the {@link DispatchHandle}: each row
 * names, for every choice, the local slot it is for (-1 when elsewhere) and its weight. The rows
 * lie in runs of received row indices ({@code [starts[b], starts[b] + counts[b])}): one run in a
 * normal dispatch, one per source in a low-latency one, whose fixed regions leave gaps. Owned by
 * the rank thread.
 */
final class RecvGrouping {
    private final int rank;
    private final int topK;
    private final int[] slotCursor;

    RecvGrouping(int rank, int topK, int localExperts) {
        this.rank = rank;
        this.topK = topK;
        this.slotCursor = new int[localExperts];
    }

    /** Local expert slots on this rank. */
    int localExperts() {
        return slotCursor.length;
    }

    void group(
            DispatchHandle handle,
            ByteBuffer recv,
            DispatchRowLayout row,
            int[] starts,
            long[] counts,
            int runs) {
        final int localExperts = slotCursor.length;
        final int rowBytes = row.rowBytes();
        Arrays.fill(handle.expertOffsets, 0);
        for (int b = 0; b < runs; b++) {
            for (int j = starts[b]; j < starts[b] + counts[b]; j++) {
                for (int k = 0; k < topK; k++) {
                    final int slot = recv.getInt(j * rowBytes + row.slotOffset(k));
                    if (slot >= localExperts) {
                        throw new A2aException(
                                "received row names a slot this rank lacks: rank="
                                        + rank
                                        + ", row="
                                        + j
                                        + ", slot="
                                        + slot
                                        + ", localExperts="
                                        + localExperts);
                    }
                    if (slot >= 0) {
                        handle.expertOffsets[slot + 1]++;
                    }
                }
            }
        }
        for (int s = 0; s < localExperts; s++) {
            handle.expertOffsets[s + 1] += handle.expertOffsets[s];
            slotCursor[s] = handle.expertOffsets[s];
        }
        final int total = handle.expertOffsets[localExperts];
        if (handle.expertRows.length < total) {
            handle.expertRows = new int[total];
            handle.expertWeights = new float[total];
        }
        for (int b = 0; b < runs; b++) {
            for (int j = starts[b]; j < starts[b] + counts[b]; j++) {
                for (int k = 0; k < topK; k++) {
                    final int slot = recv.getInt(j * rowBytes + row.slotOffset(k));
                    if (slot >= 0) {
                        final int at = slotCursor[slot]++;
                        handle.expertRows[at] = j;
                        handle.expertWeights[at] =
                                recv.getFloat(j * rowBytes + row.weightOffset(k));
                    }
                }
            }
        }
    }
}
