package moe.a2a.kernels;

import static moe.a2a.kernels.VectorKernels.FLOATS;
import static moe.a2a.kernels.VectorKernels.INTS;
import static moe.a2a.kernels.VectorKernels.LANES;
import static moe.a2a.kernels.VectorKernels.LE;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;

/**
 * The Vector API loops of {@link WeightKernels}. A block of {@link #BLOCK} bf16 weights is read as
 * {@link #LANES} 32-bit lanes: a shift gives its even elements in fp32, a mask its odd ones, each
 * met by the paired activations' even or odd half. Four activation rows meet two weight rows at a
 * time (eight accumulators), a lone row four weight rows; either way every product of a row and a
 * column adds its blocks in the same order into one accumulator, and its lanes are summed once.
 */
final class VectorWeights {
    static final int BLOCK = 2 * LANES;

    private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final int HIGH_HALF = 0xFFFF0000;

    private VectorWeights() {}

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
        final long stride = 4L * k;
        int i = 0;
        for (; i + 4 <= m; i += 4) {
            final long x0 = xOffset + i * stride;
            int j = n0;
            for (; j + 2 <= n1; j += 2) {
                fourByTwo(x, x0, k, w, wOffset + 2L * j * k, out, outOffset, ldOut, i, j);
            }
            for (; j < n1; j++) {
                for (int r = 0; r < 4; r++) {
                    oneByOne(x, x0 + r * stride, k, w, wOffset, out, outOffset, ldOut, i + r, j);
                }
            }
        }
        for (; i < m; i++) {
            final long xRow = xOffset + i * stride;
            int j = n0;
            for (; j + 4 <= n1; j += 4) {
                oneByFour(x, xRow, k, w, wOffset + 2L * j * k, out, outOffset, ldOut, i, j);
            }
            for (; j < n1; j++) {
                oneByOne(x, xRow, k, w, wOffset, out, outOffset, ldOut, i, j);
            }
        }
    }

    private static void fourByTwo(
            MemorySegment x,
            long x0,
            int k,
            MemorySegment w,
            long w0,
            MemorySegment out,
            long outOffset,
            int ldOut,
            int i,
            int j) {
        final long stride = 4L * k;
        final long w1 = w0 + 2L * k;
        FloatVector a00 = FloatVector.zero(FLOATS);
        FloatVector a01 = FloatVector.zero(FLOATS);
        FloatVector a10 = FloatVector.zero(FLOATS);
        FloatVector a11 = FloatVector.zero(FLOATS);
        FloatVector a20 = FloatVector.zero(FLOATS);
        FloatVector a21 = FloatVector.zero(FLOATS);
        FloatVector a30 = FloatVector.zero(FLOATS);
        FloatVector a31 = FloatVector.zero(FLOATS);
        final int whole = k - k % BLOCK;
        for (int c = 0; c < whole; c += BLOCK) {
            final IntVector p0 = IntVector.fromMemorySegment(INTS, w, w0 + 2L * c, LE);
            final IntVector p1 = IntVector.fromMemorySegment(INTS, w, w1 + 2L * c, LE);
            final FloatVector e0 = even(p0);
            final FloatVector o0 = odd(p0);
            final FloatVector e1 = even(p1);
            final FloatVector o1 = odd(p1);
            long at = x0 + 4L * c;
            FloatVector xe = FloatVector.fromMemorySegment(FLOATS, x, at, LE);
            FloatVector xo = FloatVector.fromMemorySegment(FLOATS, x, at + 4L * LANES, LE);
            a00 = xo.fma(o0, xe.fma(e0, a00));
            a01 = xo.fma(o1, xe.fma(e1, a01));
            at += stride;
            xe = FloatVector.fromMemorySegment(FLOATS, x, at, LE);
            xo = FloatVector.fromMemorySegment(FLOATS, x, at + 4L * LANES, LE);
            a10 = xo.fma(o0, xe.fma(e0, a10));
            a11 = xo.fma(o1, xe.fma(e1, a11));
            at += stride;
            xe = FloatVector.fromMemorySegment(FLOATS, x, at, LE);
            xo = FloatVector.fromMemorySegment(FLOATS, x, at + 4L * LANES, LE);
            a20 = xo.fma(o0, xe.fma(e0, a20));
            a21 = xo.fma(o1, xe.fma(e1, a21));
            at += stride;
            xe = FloatVector.fromMemorySegment(FLOATS, x, at, LE);
            xo = FloatVector.fromMemorySegment(FLOATS, x, at + 4L * LANES, LE);
            a30 = xo.fma(o0, xe.fma(e0, a30));
            a31 = xo.fma(o1, xe.fma(e1, a31));
        }
        store(a00, x, x0, w, w0, whole, k, out, outOffset, ldOut, i, j);
        store(a01, x, x0, w, w1, whole, k, out, outOffset, ldOut, i, j + 1);
        store(a10, x, x0 + stride, w, w0, whole, k, out, outOffset, ldOut, i + 1, j);
        store(a11, x, x0 + stride, w, w1, whole, k, out, outOffset, ldOut, i + 1, j + 1);
        store(a20, x, x0 + 2 * stride, w, w0, whole, k, out, outOffset, ldOut, i + 2, j);
        store(a21, x, x0 + 2 * stride, w, w1, whole, k, out, outOffset, ldOut, i + 2, j + 1);
        store(a30, x, x0 + 3 * stride, w, w0, whole, k, out, outOffset, ldOut, i + 3, j);
        store(a31, x, x0 + 3 * stride, w, w1, whole, k, out, outOffset, ldOut, i + 3, j + 1);
    }

    private static void oneByFour(
            MemorySegment x,
            long xRow,
            int k,
            MemorySegment w,
            long w0,
            MemorySegment out,
            long outOffset,
            int ldOut,
            int i,
            int j) {
        final long w1 = w0 + 2L * k;
        final long w2 = w1 + 2L * k;
        final long w3 = w2 + 2L * k;
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        FloatVector a2 = FloatVector.zero(FLOATS);
        FloatVector a3 = FloatVector.zero(FLOATS);
        final int whole = k - k % BLOCK;
        for (int c = 0; c < whole; c += BLOCK) {
            final long at = xRow + 4L * c;
            final FloatVector xe = FloatVector.fromMemorySegment(FLOATS, x, at, LE);
            final FloatVector xo = FloatVector.fromMemorySegment(FLOATS, x, at + 4L * LANES, LE);
            final IntVector p0 = IntVector.fromMemorySegment(INTS, w, w0 + 2L * c, LE);
            final IntVector p1 = IntVector.fromMemorySegment(INTS, w, w1 + 2L * c, LE);
            final IntVector p2 = IntVector.fromMemorySegment(INTS, w, w2 + 2L * c, LE);
            final IntVector p3 = IntVector.fromMemorySegment(INTS, w, w3 + 2L * c, LE);
            a0 = xo.fma(odd(p0), xe.fma(even(p0), a0));
            a1 = xo.fma(odd(p1), xe.fma(even(p1), a1));
            a2 = xo.fma(odd(p2), xe.fma(even(p2), a2));
            a3 = xo.fma(odd(p3), xe.fma(even(p3), a3));
        }
        store(a0, x, xRow, w, w0, whole, k, out, outOffset, ldOut, i, j);
        store(a1, x, xRow, w, w1, whole, k, out, outOffset, ldOut, i, j + 1);
        store(a2, x, xRow, w, w2, whole, k, out, outOffset, ldOut, i, j + 2);
        store(a3, x, xRow, w, w3, whole, k, out, outOffset, ldOut, i, j + 3);
    }

    private static void oneByOne(
            MemorySegment x,
            long xRow,
            int k,
            MemorySegment w,
            long wOffset,
            MemorySegment out,
            long outOffset,
            int ldOut,
            int i,
            int j) {
        final long wRow = wOffset + 2L * j * k;
        FloatVector acc = FloatVector.zero(FLOATS);
        final int whole = k - k % BLOCK;
        for (int c = 0; c < whole; c += BLOCK) {
            final long at = xRow + 4L * c;
            final FloatVector xe = FloatVector.fromMemorySegment(FLOATS, x, at, LE);
            final FloatVector xo = FloatVector.fromMemorySegment(FLOATS, x, at + 4L * LANES, LE);
            final IntVector p = IntVector.fromMemorySegment(INTS, w, wRow + 2L * c, LE);
            acc = xo.fma(odd(p), xe.fma(even(p), acc));
        }
        store(acc, x, xRow, w, wRow, whole, k, out, outOffset, ldOut, i, j);
    }

    private static FloatVector even(IntVector pairs) {
        return pairs.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
    }

    private static FloatVector odd(IntVector pairs) {
        return pairs.and(HIGH_HALF).reinterpretAsFloats();
    }

    /** The lanes' sum plus the columns past the last block, into {@code out[i, j]}. */
    private static void store(
            FloatVector acc,
            MemorySegment x,
            long xRow,
            MemorySegment w,
            long wRow,
            int whole,
            int k,
            MemorySegment out,
            long outOffset,
            int ldOut,
            int i,
            int j) {
        final float sum =
                ScalarWeights.tail(
                        acc.reduceLanes(VectorOperators.ADD), x, xRow, w, wRow, whole, k);
        out.set(FLOAT, outOffset + 4L * ((long) i * ldOut + j), sum);
    }
}
