package moe.a2a.dispatch;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import moe.a2a.comm.SegmentReader;
import moe.a2a.kernels.DType;

/**
 * Sums each token's returned rows into its output row. Each source's segment is in token order, so
 * walking the tokens with one cursor per rank visits every token's rows together: its output row is
 * written once, in order. Reused per combine. Owned by the rank thread.
 */
final class RowReducer implements SegmentReader {
    private final DispatchLayout layout;
    private final int hidden;
    private final int worldSize;
    private final SegmentViews outView = new SegmentViews(1);
    private final long[] cursor;
    private final SegmentViews sources;
    private DispatchRowLayout row;
    private FloatBuffer out;

    RowReducer(DispatchLayout layout, int hidden, int worldSize) {
        this.layout = layout;
        this.hidden = hidden;
        this.worldSize = worldSize;
        this.cursor = new long[worldSize];
        this.sources = new SegmentViews(worldSize);
    }

    void prepare(DispatchRowLayout row, FloatBuffer out) {
        this.row = row;
        this.out = out;
    }

    @Override
    public void read(ByteBuffer[] segments, long[] offsets) {
        final int combineRowBytes = row.combineRowBytes();
        final DType dtype = row.dtype();
        final MemorySegment dst = outView.of(0, out);
        System.arraycopy(offsets, 0, cursor, 0, worldSize);
        final int numTokens = layout.numTokens();
        for (int t = 0; t < numTokens; t++) {
            final long outAt = (long) t * hidden * Float.BYTES;
            boolean first = true;
            for (int r = 0; r < worldSize; r++) {
                if (layout.tokenInRank(t, r)) {
                    final long at = cursor[r];
                    cursor[r] += combineRowBytes;
                    final MemorySegment src = sources.of(r, segments[r]);
                    if (first) {
                        dtype.decode(src, at, dst, outAt, hidden);
                        first = false;
                    } else {
                        dtype.accumulate(src, at, dst, outAt, hidden);
                    }
                }
            }
            if (first) {
                dst.asSlice(outAt, (long) hidden * Float.BYTES).fill((byte) 0);
            }
        }
    }
}
