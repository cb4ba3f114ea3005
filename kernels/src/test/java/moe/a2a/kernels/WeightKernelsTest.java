package moe.a2a.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Holds {@link WeightKernels}' bf16 product, vector and scalar loops alike, to a float64 product of
 * the same bf16 weights, on random seeded inputs and on weights at bf16's extremes, over row counts
 * that meet every blocking of rows and columns and reductions with and without a tail.
 */
class WeightKernelsTest {
    private static final long SEED = 0x62663136L;
    private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final int[] DEPTHS = {1, 7, 16, 33, 100, 1029};
    private static final float SENTINEL = -12345f;

    private enum Loops {
        VECTOR,
        SCALAR
    }

    @Test
    void shouldMatchAFloat64ProductWhenGivenRandomWeightsAndActivations() {
        SplittableRandom random = new SplittableRandom(SEED);
        for (Loops loops : Loops.values()) {
            for (int k : DEPTHS) {
                for (int m = 1; m <= 9; m++) {
                    int n = 1 + random.nextInt(11);
                    int n0 = random.nextInt(n);
                    int n1 = n0 + 1 + random.nextInt(n - n0);
                    float[] x = floats(random, m * k, 4);
                    short[] w = bf16s(random, n * k, 4);
                    check(loops, x, m, k, w, n, n0, n1, "seed=" + SEED + " " + loops);
                }
            }
        }
    }

    @Test
    void shouldMatchAFloat64ProductWhenWeightsReachBf16Extremes() {
        // the largest finite, the smallest normal, subnormals and signed zeros
        short[] extremes = {
            0x7F7F, (short) 0xFF7F, 0x0080, (short) 0x8080, 0x0001, 0x007F, 0, -0x8000
        };
        SplittableRandom random = new SplittableRandom(SEED + 1);
        for (Loops loops : Loops.values()) {
            for (int k : DEPTHS) {
                int m = 1 + random.nextInt(9);
                int n = 1 + random.nextInt(9);
                short[] w = new short[n * k];
                for (int e = 0; e < w.length; e++) {
                    w[e] = extremes[random.nextInt(extremes.length)];
                }
                // activations under 1/k: every partial sum stays finite, subnormal products too
                float[] x = floats(random, m * k, 1.0 / k);
                check(loops, x, m, k, w, n, 0, n, "extremes seed=" + (SEED + 1) + " " + loops);
            }
        }
    }

    @Test
    void shouldGiveEachRowTheSameBitsWhateverTheRowsAndColumnsBesideIt() {
        SplittableRandom random = new SplittableRandom(SEED + 2);
        final int k = 1029;
        final int n = 13;
        final int m = 9;
        float[] x = floats(random, m * k, 2);
        short[] w = bf16s(random, n * k, 2);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment xs = paired(arena, x, m, k);
            MemorySegment ws = bf16Segment(arena, w);
            MemorySegment all = arena.allocate(4L * m * n);
            WeightKernels.bf16xwT(xs, 0, m, k, ws, 0, 0, n, all, 0, n);
            MemorySegment one = arena.allocate(4L * n);
            for (int i = 0; i < m; i++) {
                for (int j = 0; j < n; j++) {
                    WeightKernels.bf16xwT(xs, 4L * i * k, 1, k, ws, 0, j, j + 1, one, 0, n);
                    assertThat(Float.floatToRawIntBits(one.get(FLOAT, 4L * j)))
                            .as("row %d column %d alone, seed=%d", i, j, SEED + 2)
                            .isEqualTo(Float.floatToRawIntBits(all.get(FLOAT, 4L * (i * n + j))));
                }
            }
        }
    }

    @Test
    void shouldPairEvenThenOddColumnsWithinEachWholeBlock() {
        final int block = WeightKernels.pairBlock();
        final int k = 2 * block + 3;
        final int m = 2;
        float[] x = new float[m * k];
        for (int e = 0; e < x.length; e++) {
            x[e] = e;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = paired(arena, x, m, k);
            for (int i = 0; i < m; i++) {
                for (int c = 0; c < k; c++) {
                    int b = c / block * block;
                    int l = c - b;
                    int source =
                            c >= k - k % block
                                    ? c
                                    : l < block / 2 ? b + 2 * l : b + 2 * (l - block / 2) + 1;
                    assertThat(p.get(FLOAT, 4L * (i * k + c)))
                            .as("row %d paired column %d", i, c)
                            .isEqualTo(x[i * k + source]);
                }
            }
        }
    }

    private static void check(
            Loops loops, float[] x, int m, int k, short[] w, int n, int n0, int n1, String what) {
        final int ldOut = n + 2;
        try (Arena arena = Arena.ofConfined()) {
            final int block = loops == Loops.VECTOR ? VectorWeights.BLOCK : ScalarWeights.BLOCK;
            MemorySegment xs = MemorySegment.ofArray(x);
            MemorySegment p = arena.allocate(4L * m * k);
            ScalarWeights.pair(block, copy(arena, xs), 0, m, k, p, 0);
            MemorySegment ws = bf16Segment(arena, w);
            MemorySegment out = arena.allocate(4L * m * ldOut + 8);
            for (long at = 0; at < out.byteSize(); at += 4) {
                out.set(FLOAT, at, SENTINEL);
            }
            if (loops == Loops.VECTOR) {
                VectorWeights.bf16xwT(p, 0, m, k, ws, 0, n0, n1, out, 4, ldOut);
            } else {
                ScalarWeights.bf16xwT(p, 0, m, k, ws, 0, n0, n1, out, 4, ldOut);
            }
            for (int i = 0; i < m; i++) {
                for (int j = 0; j < ldOut; j++) {
                    float got = out.get(FLOAT, 4 + 4L * (i * ldOut + j));
                    if (j < n0 || j >= n1) {
                        assertThat(got).as("%s untouched [%d, %d]", what, i, j).isEqualTo(SENTINEL);
                        continue;
                    }
                    double exact = 0;
                    double magnitude = 0;
                    for (int c = 0; c < k; c++) {
                        double product = (double) x[i * k + c] * widen(w[j * k + c]);
                        exact += product;
                        magnitude += Math.abs(product);
                    }
                    // fp32 accumulation over k terms: k roundings of at most half an ulp each
                    double bound = k * 0x1p-24 * magnitude + k * Float.MIN_VALUE;
                    assertThat(Math.abs(got - exact))
                            .as("%s m=%d k=%d n=[%d,%d) out[%d, %d]", what, m, k, n0, n1, i, j)
                            .isLessThanOrEqualTo(bound);
                }
            }
        }
    }

    private static MemorySegment copy(Arena arena, MemorySegment heap) {
        return arena.allocate(heap.byteSize()).copyFrom(heap);
    }

    private static MemorySegment paired(Arena arena, float[] x, int m, int k) {
        MemorySegment p = arena.allocate(4L * m * k);
        WeightKernels.pairActivations(copy(arena, MemorySegment.ofArray(x)), 0, m, k, p, 0);
        return p;
    }

    private static MemorySegment bf16Segment(Arena arena, short[] w) {
        MemorySegment s = arena.allocate(2L * w.length);
        for (int e = 0; e < w.length; e++) {
            s.set(SHORT, 2L * e, w[e]);
        }
        return s;
    }

    private static float widen(short bf16) {
        return Float.intBitsToFloat(bf16 << 16);
    }

    private static float[] floats(SplittableRandom random, int count, double scale) {
        float[] f = new float[count];
        for (int e = 0; e < count; e++) {
            f[e] = (float) ((random.nextDouble() * 2 - 1) * scale);
        }
        return f;
    }

    private static short[] bf16s(SplittableRandom random, int count, double scale) {
        short[] s = new short[count];
        for (int e = 0; e < count; e++) {
            s[e] =
                    (short)
                            (Float.floatToRawIntBits(
                                            DType.BF16.round(
                                                    (float)
                                                            ((random.nextDouble() * 2 - 1)
                                                                    * scale)))
                                    >>> 16);
        }
        return s;
    }
}
