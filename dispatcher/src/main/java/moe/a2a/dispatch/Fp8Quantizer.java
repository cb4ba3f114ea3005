package moe.a2a.dispatch;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.RowKernels;

/**
 * Quantizes a step's tokens once, at their source, into FP8 rows (E4M3 and one fp32 scale per 128
 * channels, {@link DispatchRowLayout}) that dispatch then packs like any payload. The buffer grows
 * to the largest step seen and is reused. Owned by the rank thread.
 */
final class Fp8Quantizer {
    private static final int VIEW_TOKENS = 0;
    private static final int VIEW_QUANTIZED = 1;
    private static final int VIEW_STAGING = 2;

    private final int hidden;
    private final SegmentViews views = new SegmentViews(3);
    private ByteBuffer quantized = Dispatcher.allocate(0);
    private ByteBuffer staging = Dispatcher.allocate(0);

    Fp8Quantizer(int hidden) {
        this.hidden = hidden;
    }

    /** {@code [numTokens, H]} rows of {@code dtype} as FP8 rows; valid until the next call. */
    ByteBuffer quantize(ByteBuffer tokens, int numTokens, DType dtype) {
        final int rowBytes = RowKernels.fp8RowBytes(hidden);
        quantized = Dispatcher.ensure(quantized, (long) numTokens * rowBytes);
        final MemorySegment src = views.of(VIEW_TOKENS, tokens);
        final MemorySegment dst = views.of(VIEW_QUANTIZED, quantized);
        final long tokenBytes = (long) hidden * dtype.sizeBytes();
        for (int t = 0; t < numTokens; t++) {
            final long at = (long) t * rowBytes;
            switch (dtype) {
                case BF16 -> RowKernels.quantizeFp8FromBf16(src, t * tokenBytes, dst, at, hidden);
                case FP32 -> RowKernels.quantizeFp8(src, t * tokenBytes, dst, at, hidden);
                case FP16 -> {
                    staging = Dispatcher.ensure(staging, (long) hidden * Float.BYTES);
                    final MemorySegment row = views.of(VIEW_STAGING, staging);
                    dtype.decode(src, t * tokenBytes, row, 0, hidden);
                    RowKernels.quantizeFp8(row, 0, dst, at, hidden);
                }
            }
        }
        return quantized;
    }
}
