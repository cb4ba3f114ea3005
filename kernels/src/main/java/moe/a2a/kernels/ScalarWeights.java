package moe.a2a.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The scalar loops of {@link WeightKernels}, in the vector loops' order over each block (even
 * columns, then odd ones), so both read the same paired activations.
 */
final class ScalarWeights {
    /** The paired block without vectors: that of 256-bit ones. */
    static final int BLOCK = 16;

    private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;

    private ScalarWeights() {}

    static void pair(
            int block,
            MemorySegment x,
            long xOffset,
            int m,
            int k,
            MemorySegment paired,
            long pairedOffset) {
        final int whole = k - k % block;
        final int half = block / 2;
        for (int i = 0; i < m; i++) {
            final long from = xOffset + 4L * i * k;
            final long to = pairedOffset + 4L * i * k;
            for (int c = 0; c < whole; c += block) {
                for (int l = 0; l < half; l++) {
                    paired.set(FLOAT, to + 4L * (c + l), x.get(FLOAT, from + 4L * (c + 2 * l)));
                    paired.set(
                            FLOAT,
                            to + 4L * (c + half + l),
                            x.get(FLOAT, from + 4L * (c + 2 * l + 1)));
                }
            }
            MemorySegment.copy(x, from + 4L * whole, paired, to + 4L * whole, 4L * (k - whole));
        }
    }

    static void bf16xwT(
            MemorySegment x,
            long xOffset,
            int m,
            int k,
            MemorySegment w,
            long wOffset,
            int n0,
            int n1,
            MemorySegment out,
            long outOffset,
            int ldOut) {
        final int whole = k - k % BLOCK;
        final int half = BLOCK / 2;
        for (int j = n0; j < n1; j++) {
            final long row = wOffset + 2L * j * k;
            for (int i = 0; i < m; i++) {
                final long xRow = xOffset + 4L * i * k;
                float sum = 0;
                for (int c = 0; c < whole; c += BLOCK) {
                    for (int l = 0; l < half; l++) {
                        sum =
                                Math.fma(
                                        x.get(FLOAT, xRow + 4L * (c + l)),
                                        bf16(w, row + 2L * (c + 2 * l)),
                                        sum);
                        sum =
                                Math.fma(
                                        x.get(FLOAT, xRow + 4L * (c + half + l)),
                                        bf16(w, row + 2L * (c + 2 * l + 1)),
                                        sum);
                    }
                }
                out.set(
                        FLOAT,
                        outOffset + 4L * ((long) i * ldOut + j),
                        tail(sum, x, xRow, w, row, whole, k));
            }
        }
    }

    /** {@code sum} plus the columns from {@code c} on, in order (natural order past the blocks). */
    static float tail(
            float sum, MemorySegment x, long xRow, MemorySegment w, long wRow, int c, int k) {
        for (; c < k; c++) {
            sum = Math.fma(x.get(FLOAT, xRow + 4L * c), bf16(w, wRow + 2L * c), sum);
        }
        return sum;
    }

    private static float bf16(MemorySegment w, long at) {
        return Float.intBitsToFloat(w.get(SHORT, at) << 16);
    }
}
