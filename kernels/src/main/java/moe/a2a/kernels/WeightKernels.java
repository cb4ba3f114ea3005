package moe.a2a.kernels;

import java.lang.foreign.MemorySegment;

/**
 * Products of fp32 activations with expert weights held as the checkpoint stores them: {@code
 * out[m, n0..n1) = x[m, k] · w[n0..n1, k]ᵀ}, the weight row-major {@code [n, k]} in bf16, every
 * weight element widened to fp32 in registers and multiplied with fp32 accumulation. Each weight
 * row is read from memory once for all {@code m} rows, so at decode sizes (a few rows) the product
 * runs near the memory's read rate rather than at a GEMM's compute rate; a column range lets
 * several threads share one matrix. A row's arithmetic (its reduction order over {@code k}) depends
 * only on {@code k}, never on {@code m} or the column range.
 *
 * <p>The activations come in {@link #pairActivations paired} order: within each block of {@link
 * #pairBlock} columns, the even columns first, then the odd ones. A bf16 pair read as one 32-bit
 * lane then widens with one shift (the even element) and one mask (the odd one), where widening
 * shorts lane by lane measured half as fast on AVX2.
 *
 * <p>Vector API when {@link RowKernels#vectorized()}, a scalar loop otherwise; the two differ only
 * in the order of the fp32 additions. Segments are off-heap, little-endian; offsets in bytes;
 * {@code out}'s rows are {@code ldOut} floats apart. Stateless and thread-safe; allocates nothing.
 */
public final class WeightKernels {
    private WeightKernels() {}

    /** Columns of a block whose even and odd columns {@link #pairActivations} separates. */
    public static int pairBlock() {
        return RowKernels.vectorized() ? VectorWeights.BLOCK : ScalarWeights.BLOCK;
    }

    /**
     * Copies {@code x [m, k]} (fp32) into {@code paired [m, k]} in paired order: in each whole
     * block of {@link #pairBlock} columns of a row, the even columns, then the odd ones; the
     * columns past the last whole block as they are.
     */
    public static void pairActivations(
            MemorySegment x, long xOffset, int m, int k, MemorySegment paired, long pairedOffset) {
        ScalarWeights.pair(pairBlock(), x, xOffset, m, k, paired, pairedOffset);
    }

    /**
     * {@code out[i, j] = Σ_c x[i, c] · w[j, c]} for rows {@code i < m} and columns {@code n0 <= j <
     * n1}; {@code x} is {@code [m, k]} fp32 in paired order at {@code xOffset}, {@code w} bf16
     * {@code [n, k]} at {@code wOffset}, {@code out} fp32 at {@code outOffset} with its row {@code
     * i} at {@code outOffset + 4·i·ldOut}.
     */
    public static void bf16xwT(
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
        if (RowKernels.vectorized()) {
            VectorWeights.bf16xwT(x, xOffset, m, k, w, wOffset, n0, n1, out, outOffset, ldOut);
        } else {
            ScalarWeights.bf16xwT(x, xOffset, m, k, w, wOffset, n0, n1, out, outOffset, ldOut);
        }
    }
}
