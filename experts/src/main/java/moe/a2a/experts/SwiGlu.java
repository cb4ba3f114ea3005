package moe.a2a.experts;

import java.lang.foreign.MemorySegment;
import java.nio.FloatBuffer;
import moe.a2a.kernels.WeightKernels;

/**
 * The SwiGLU forward pass {@code y = W2 · (silu(W1·x) ⊙ (W3·x))} with fp32 activations, on an
 * expert held as fp32 or bf16, its columns shared over the process's {@link ExpertThreads}: the
 * gate and up projections with the activation, then the down projection. Each product runs the way
 * its weight's dtype chooses: fp32 weights through OpenBLAS sgemm ({@link Sgemm}); bf16 weights
 * through {@link WeightKernels#bf16xwT}, which reads each weight byte once and widens it in
 * registers. The bf16 kernel is used at every row count: a row's bits then do not depend on the
 * rows beside it. Widening bf16 to fp32 for sgemm would be faster from about 16 rows (a 1024 × 2816
 * product on one core: 7.8 against 11.9 ms at 64 rows), but its bits differ from the kernel's, so a
 * token's answer would change with how requests are batched.
 *
 * <p>Scratch grows to the largest batch seen. One per thread that runs it.
 */
public final class SwiGlu {
    /** Parts per thread, so that a thread slowed by other work leaves its share to the others. */
    private static final int PARTS_PER_THREAD = 4;

    private final int hidden;
    private final ExpertThreads threads;
    private FloatBuffer gateProj = Buffers.floats(0);
    private FloatBuffer upProj = Buffers.floats(0);
    private FloatBuffer paired = Buffers.floats(0);

    public SwiGlu(int hidden, ExpertThreads threads) {
        this.hidden = hidden;
        this.threads = threads;
    }

    /** {@code out[rows, H] = W2 · (silu(W1·x) ⊙ (W3·x))} for {@code x[rows, H]}. */
    public void forward(HeldExpert w, FloatBuffer x, int rows, FloatBuffer out) {
        if (rows == 0) {
            return;
        }
        final int ffn = w.ffn();
        gateProj = Buffers.ensure(gateProj, (long) rows * ffn);
        upProj = Buffers.ensure(upProj, (long) rows * ffn);
        switch (w) {
            case ExpertWeights f -> {
                gateUp(
                        rows,
                        ffn,
                        (j0, j1) -> {
                            Sgemm.xwT(x, rows, hidden, f.w1(), j0, j1, gateProj, ffn);
                            Sgemm.xwT(x, rows, hidden, f.w3(), j0, j1, upProj, ffn);
                        });
                down(rows, (j0, j1) -> Sgemm.xwT(gateProj, rows, ffn, f.w2(), j0, j1, out, hidden));
            }
            case Bf16Expert b -> streamed(b, x, rows, out);
        }
    }

    private void streamed(Bf16Expert b, FloatBuffer x, int rows, FloatBuffer out) {
        final int ffn = b.ffn();
        final MemorySegment px = pair(x, rows, hidden);
        gateUp(
                rows,
                ffn,
                (j0, j1) -> {
                    stream(px, rows, hidden, b.w1(), j0, j1, gateProj, ffn);
                    stream(px, rows, hidden, b.w3(), j0, j1, upProj, ffn);
                });
        final MemorySegment ph = pair(gateProj, rows, ffn);
        down(rows, (j0, j1) -> stream(ph, rows, ffn, b.w2(), j0, j1, out, hidden));
    }

    /** A thread's share of a product: its columns {@code j0..j1}. */
    @FunctionalInterface
    private interface Columns {
        void run(int j0, int j1);
    }

    /** The gate and up projections, then {@code silu(gate) ⊙ up} into the gate's scratch. */
    private void gateUp(int rows, int ffn, Columns project) {
        split(
                ffn,
                (j0, j1) -> {
                    project.run(j0, j1);
                    for (int i = 0; i < rows; i++) {
                        for (int j = i * ffn + j0; j < i * ffn + j1; j++) {
                            float a = gateProj.get(j);
                            gateProj.put(j, a / (1f + (float) Math.exp(-a)) * upProj.get(j));
                        }
                    }
                });
    }

    private void down(int rows, Columns project) {
        split(hidden, project);
    }

    private void split(int n, Columns columns) {
        final int parts = Math.max(1, Math.min(threads.threads() * PARTS_PER_THREAD, n / 16));
        threads.run(parts, p -> columns.run(columnAt(n, parts, p), columnAt(n, parts, p + 1)));
    }

    /** Where part {@code p} of {@code parts} starts; a multiple of 8 columns but at the end. */
    private static int columnAt(int n, int parts, int p) {
        return p == parts ? n : (int) ((long) n * p / parts) & ~7;
    }

    private MemorySegment pair(FloatBuffer x, int rows, int k) {
        paired = Buffers.ensure(paired, (long) rows * k);
        MemorySegment to = MemorySegment.ofBuffer(paired);
        WeightKernels.pairActivations(MemorySegment.ofBuffer(x), 0, rows, k, to, 0);
        return to;
    }

    private static void stream(
            MemorySegment px,
            int rows,
            int k,
            MemorySegment w,
            int j0,
            int j1,
            FloatBuffer out,
            int ldOut) {
        WeightKernels.bf16xwT(px, 0, rows, k, w, 0, j0, j1, MemorySegment.ofBuffer(out), 0, ldOut);
    }
}
