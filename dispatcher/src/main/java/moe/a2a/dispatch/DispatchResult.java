package moe.a2a.dispatch;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import moe.a2a.kernels.RowKernels;

/**
 * What dispatch delivers to this rank: the received rows, grouped per local expert through the
 * {@link DispatchHandle}. Rows that travelled as FP8 are dequantized here, when the experts read
 * them. The kernels only ever see off-heap memory here (a Java array goes through an off-heap row
 * and a bulk copy): a vector kernel that has run on heap segments runs several times slower on
 * off-heap ones afterwards, in the whole JVM. Reused by its {@link Dispatcher}: valid until the
 * next dispatch; over a transport that receives in place ({@link
 * moe.a2a.comm.Communicator#receivesInPlace}, shared memory) the rows are the transport's, valid
 * until the rank's next exchange (its combine). Owned by the rank thread.
 */
public final class DispatchResult {
    private static final int VIEW_RECV = 0;
    private static final int VIEW_DST = 1;
    private static final int VIEW_ROW = 2;
    private static final int VIEW_OUT = 3;

    private final DispatchHandle handle;
    private final SegmentViews views = new SegmentViews(4);
    private ByteBuffer row = Dispatcher.allocate(0);
    ByteBuffer recvBuffer;

    DispatchResult(DispatchHandle handle) {
        this.handle = handle;
    }

    public DispatchHandle handle() {
        return handle;
    }

    /** Tokens received, each once. */
    public int numRecvTokens() {
        return handle.numRecvTokens;
    }

    /** Token×k assignments received, all local experts together. */
    public int numExpertRows() {
        return handle.expertOffsets[handle.expertOffsets.length - 1];
    }

    /**
     * Writes the fp32 inputs of local expert {@code slot} ({@code [recvTokensPerLocalExpert, H]},
     * row-major) into {@code dst} starting at element {@code dstIndex}.
     */
    public void gather(int slot, FloatBuffer dst, int dstIndex) {
        final int hidden = handle.rowLayout.hidden();
        final MemorySegment out = views.of(VIEW_DST, dst);
        final int from = handle.expertOffsets[slot];
        final int to = handle.expertOffsets[slot + 1];
        for (int i = from; i < to; i++) {
            decodeRecvToken(
                    handle.expertRows[i],
                    out,
                    (long) (dstIndex + (i - from) * hidden) * Float.BYTES);
        }
    }

    /**
     * Writes received token {@code index}'s row in the tokens' own dtype (dequantized when it
     * travelled as FP8) into {@code dst} at {@code dstByte}.
     */
    public void copyRecvToken(int index, ByteBuffer dst, int dstByte) {
        final DispatchRowLayout layout = handle.rowLayout;
        if (layout.dispatchDType() != DispatchDType.FP8) {
            dst.put(dstByte, recvBuffer, index * layout.rowBytes(), layout.payloadBytes());
            return;
        }
        final MemorySegment fp32 = rowScratch();
        decodeRecvToken(index, fp32, 0);
        layout.dtype().encode(fp32, 0, views.of(VIEW_OUT, dst), dstByte, layout.hidden());
    }

    /** Writes received token {@code index} as fp32 into {@code dst[dstIndex..dstIndex+H)}. */
    public void recvToken(int index, float[] dst, int dstIndex) {
        final MemorySegment fp32 = rowScratch();
        decodeRecvToken(index, fp32, 0);
        MemorySegment.copy(
                fp32, ValueLayout.JAVA_FLOAT, 0, dst, dstIndex, handle.rowLayout.hidden());
    }

    private MemorySegment rowScratch() {
        row = Dispatcher.ensure(row, (long) handle.rowLayout.hidden() * Float.BYTES);
        return views.of(VIEW_ROW, row);
    }

    private void decodeRecvToken(int index, MemorySegment dst, long dstOffset) {
        final DispatchRowLayout layout = handle.rowLayout;
        final MemorySegment recv = views.of(VIEW_RECV, recvBuffer);
        final long at = (long) index * layout.rowBytes();
        if (layout.dispatchDType() == DispatchDType.FP8) {
            RowKernels.dequantizeFp8(recv, at, dst, dstOffset, layout.hidden());
        } else {
            layout.dtype().decode(recv, at, dst, dstOffset, layout.hidden());
        }
    }
}
