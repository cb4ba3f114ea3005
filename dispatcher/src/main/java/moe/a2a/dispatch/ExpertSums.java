package moe.a2a.dispatch;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import moe.a2a.kernels.RowKernels;

/**
 * The first half of combine, where the experts ran: each received token's weighted sum over this
 * rank's experts, summed in fp32 and written once in the dispatch's dtype as the row combine sends
 * back. Its scratch grows to the largest step seen and is reused. Owned by the rank thread.
 */
public final class ExpertSums {
    private static final int VIEW_PARTIALS = 0;
    private static final int VIEW_ROWS = 1;
    private static final int VIEW_EXPERT_OUTPUTS = 2;

    private final SegmentViews views = new SegmentViews(3);
    private ByteBuffer partials = Dispatcher.allocate(0);

    /**
     * Writes into {@code rows} one row per received row of {@code handle}, at its received row
     * index (the gaps between low-latency regions are left as they were, never sent back as
     * anyone's rows): {@code Σ weight × output} over the expert rows of {@code expertOutputs}
     * ({@code [numExpertRows, H]} fp32 in the handle's grouped order) that belong to it.
     */
    public void write(FloatBuffer expertOutputs, DispatchHandle handle, ByteBuffer rows) {
        final int hidden = handle.rowLayout().hidden();
        final int numRecv = handle.recvRowSpan;
        final long partialBytes = (long) numRecv * hidden * Float.BYTES;
        partials = Dispatcher.ensure(partials, partialBytes);
        final int total = handle.expertOffsets[handle.expertOffsets.length - 1];
        final MemorySegment outputs = views.of(VIEW_EXPERT_OUTPUTS, expertOutputs);
        final MemorySegment sums = views.of(VIEW_PARTIALS, partials);
        final long rowBytes = (long) hidden * Float.BYTES;
        for (int s = 0; s < handle.sources(); s++) {
            sums.asSlice(handle.recvRunStart[s] * rowBytes, handle.recvRowsPerRank[s] * rowBytes)
                    .fill((byte) 0);
        }
        for (int i = 0; i < total; i++) {
            RowKernels.axpy(
                    handle.expertWeights[i],
                    outputs,
                    i * rowBytes,
                    sums,
                    handle.expertRows[i] * rowBytes,
                    hidden);
        }
        final MemorySegment out = views.of(VIEW_ROWS, rows);
        final int outRowBytes = handle.rowLayout().combineRowBytes();
        for (int s = 0; s < handle.sources(); s++) {
            final int start = handle.recvRunStart[s];
            handle.rowLayout()
                    .dtype()
                    .encode(
                            sums,
                            start * rowBytes,
                            out,
                            (long) start * outRowBytes,
                            (int) handle.recvRowsPerRank[s] * hidden);
        }
    }
}
