package moe.a2a.comm.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.util.UncheckedBooleanSupplier;

/**
 * Lets the socket read a DATA frame's rows straight into the receive buffer the rank posted for
 * them, instead of into Netty's buffers (which the rank would then copy). While the frame decoder
 * has a posted place for the bytes to come, reads go there, bounded by the frame's end; otherwise
 * reads go to pooled buffers sized by {@code sizes}. One per channel.
 */
// Netty's allocator interface still names its deprecated Handle type.
@SuppressWarnings("deprecation")
final class LandingAllocator implements RecvByteBufAllocator {
    private final RecvByteBufAllocator sizes;
    private final FrameDecoder frames;

    LandingAllocator(RecvByteBufAllocator sizes, FrameDecoder frames) {
        this.sizes = sizes;
        this.frames = frames;
    }

    @Override
    public Handle newHandle() {
        return new LandingHandle((ExtendedHandle) sizes.newHandle(), frames);
    }

    private static final class LandingHandle extends DelegatingHandle implements ExtendedHandle {
        private final FrameDecoder frames;

        LandingHandle(ExtendedHandle sizes, FrameDecoder frames) {
            super(sizes);
            this.frames = frames;
        }

        @Override
        public ByteBuf allocate(ByteBufAllocator alloc) {
            ByteBuf landing = frames.landingBuffer();
            return landing != null ? landing : delegate().allocate(alloc);
        }

        @Override
        public boolean continueReading(UncheckedBooleanSupplier maybeMoreDataSupplier) {
            return ((ExtendedHandle) delegate()).continueReading(maybeMoreDataSupplier);
        }
    }
}
