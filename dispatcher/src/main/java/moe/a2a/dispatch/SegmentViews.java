package moe.a2a.dispatch;

import java.lang.foreign.MemorySegment;
import java.nio.Buffer;

/**
 * {@link MemorySegment} views, for the kernels, of off-heap buffers that change rarely (they grow
 * to the largest step seen): a view is made when the buffer in a place changes, never per row or
 * per step. Each view spans its buffer's whole capacity. Owned by the rank thread.
 */
final class SegmentViews {
    private final Buffer[] sources;
    private final MemorySegment[] views;

    SegmentViews(int places) {
        this.sources = new Buffer[places];
        this.views = new MemorySegment[places];
    }

    MemorySegment of(int place, Buffer buffer) {
        if (sources[place] != buffer) {
            sources[place] = buffer;
            views[place] = MemorySegment.ofBuffer(buffer.duplicate().clear());
        }
        return views[place];
    }
}
