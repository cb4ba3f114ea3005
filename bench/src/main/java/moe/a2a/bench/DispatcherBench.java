package moe.a2a.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.Arrays;
import moe.a2a.comm.Communicator;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.DispatchHandle;
import moe.a2a.dispatch.DispatchLayout;
import moe.a2a.dispatch.DispatchMode;
import moe.a2a.dispatch.DispatchPath;
import moe.a2a.dispatch.DispatchResult;
import moe.a2a.dispatch.Dispatcher;
import moe.a2a.dispatch.LowLatencyDispatcher;
import moe.a2a.dispatch.Placement;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.RowKernels;
import moe.a2a.kernels.ScalarKernels;
import moe.a2a.workload.BenchRouting;
import moe.a2a.workload.BenchWorkload;
import org.jspecify.annotations.Nullable;

/**
 * One rank's part of the dispatcher benchmark: the real {@link Dispatcher} on a workload. Dispatch
 * is layout, pack, counts and row exchange, and the grouping by local expert; combine is the row
 * exchange back and the fp32 sum at the source. In between (not timed, and followed by a barrier so
 * that combine starts together on every rank) the "expert" sends each received row back unchanged,
 * except in the first iteration, which is validated: the expert then multiplies each row by its
 * local weight and by (rank + 1), and the output must be exactly {@code Σ_d bf16(val · m_td/K ·
 * (d+1))}, where {@code val} is the bf16 payload, or with FP8 dispatch the payload after the scalar
 * kernels' quantize/dequantize round trip. Runs on the rank's thread.
 */
public final class DispatcherBench {
    private DispatcherBench() {}

    public static RankTimes run(BenchWorkload w, Communicator comm, int warmup, int iters) {
        return run(
                w,
                comm,
                warmup,
                iters,
                DispatchDType.BF16,
                Placement.contiguous(w.experts(), w.worldSize()));
    }

    public static RankTimes run(
            BenchWorkload w,
            Communicator comm,
            int warmup,
            int iters,
            DispatchDType dispatchDType,
            Placement placement) {
        return run(w, comm, warmup, iters, dispatchDType, placement, null);
    }

    /**
     * As {@link #run(BenchWorkload, Communicator, int, int, DispatchDType, Placement)}, with {@code
     * experts} timed between dispatch and combine in every iteration but the validated first.
     */
    public static RankTimes run(
            BenchWorkload w,
            Communicator comm,
            int warmup,
            int iters,
            DispatchDType dispatchDType,
            Placement placement,
            @Nullable ExpertStage experts) {
        return run(w, comm, warmup, iters, dispatchDType, DispatchMode.NORMAL, placement, experts);
    }

    /**
     * As above, exchanged in {@code mode}: low latency with regions for the workload's tokens a
     * rank ({@link LowLatencyDispatcher}).
     */
    public static RankTimes run(
            BenchWorkload w,
            Communicator comm,
            int warmup,
            int iters,
            DispatchDType dispatchDType,
            DispatchMode mode,
            Placement placement,
            @Nullable ExpertStage experts) {
        final int me = comm.rank();
        DispatchPath dispatcher =
                mode == DispatchMode.LOW_LATENCY
                        ? new LowLatencyDispatcher(
                                comm, placement, w.hidden(), w.topK(), dispatchDType, w.tokens())
                        : new Dispatcher(comm, placement, w.hidden(), w.topK(), dispatchDType);
        return run(
                w,
                me,
                comm::barrier,
                warmup,
                iters,
                dispatcher,
                experts,
                new Check() {
                    @Override
                    public boolean received(DispatchResult result) {
                        return receivedRight(w, me, result, dispatchDType, placement);
                    }

                    @Override
                    public boolean combined(int[] ids, FloatBuffer out) {
                        return combinedRight(w, me, ids, out, dispatchDType, placement);
                    }
                });
    }

    /** What the validated first iteration checks: the rows received, then the combined output. */
    interface Check {
        boolean received(DispatchResult result);

        boolean combined(int[] ids, FloatBuffer out);
    }

    /**
     * The measured loop on {@code path}, for global rank {@code me}; {@code barrier} synchronises
     * every rank of the workload.
     */
    static RankTimes run(
            BenchWorkload w,
            int me,
            Runnable barrier,
            int warmup,
            int iters,
            DispatchPath path,
            @Nullable ExpertStage experts,
            Check check) {
        final int t = w.tokens();
        final int h = w.hidden();
        final int k = w.topK();
        int[] ids = BenchRouting.topkIds(w, me);
        float[] weights = new float[t * k];
        Arrays.fill(weights, 1f / k);
        ByteBuffer tokens =
                ByteBuffer.allocateDirect(t * w.rowBytes()).order(ByteOrder.LITTLE_ENDIAN);
        for (int tok = 0; tok < t; tok++) {
            for (int c = 0; c < h; c++) {
                DType.BF16.put(tokens, (tok * h + c) * 2, BenchRouting.payload(me, tok, c));
            }
        }
        FloatBuffer out =
                ByteBuffer.allocateDirect(t * h * Float.BYTES)
                        .order(ByteOrder.nativeOrder())
                        .asFloatBuffer();
        long[] dispatchNs = new long[iters];
        long[] combineNs = new long[iters];
        long[] expertNs = new long[experts == null ? 0 : iters];
        boolean ok = true;
        for (int i = 0; i < warmup + iters; i++) {
            barrier.run();
            long t0 = System.nanoTime();
            DispatchResult result = path.dispatch(tokens, t, DType.BF16, ids, weights);
            long t1 = System.nanoTime();
            ByteBuffer back = path.combineRows(result.handle());
            long e0 = System.nanoTime();
            if (i == 0) {
                ok = check.received(result);
                scaledRows(result, back, me);
            } else if (experts != null) {
                experts.run(result, back);
            } else {
                DispatchHandle handle = result.handle();
                for (int s = 0; s < w.worldSize(); s++) {
                    for (int r = 0; r < handle.recvRowsFrom(s); r++) {
                        int j = handle.recvRowIndex(s, r);
                        result.copyRecvToken(j, back, j * w.rowBytes());
                    }
                }
            }
            long e1 = System.nanoTime();
            // The expert stage is not measured: start combine together, as peers without one do.
            barrier.run();
            long t2 = System.nanoTime();
            path.combine(result.handle(), out);
            long t3 = System.nanoTime();
            if (i == 0) {
                ok &= check.combined(ids, out);
            }
            if (i >= warmup) {
                dispatchNs[i - warmup] = t1 - t0;
                combineNs[i - warmup] = t3 - t2;
                if (experts != null) {
                    expertNs[i - warmup] = e1 - e0;
                }
            }
        }
        return new RankTimes(
                dispatchNs, combineNs, RankTimes.barriers(barrier, iters), ok, expertNs);
    }

    /** The validation expert: row × (its local weight) × (rank + 1), rounded to bf16. */
    static void scaledRows(DispatchResult result, ByteBuffer back, int rank) {
        DispatchHandle handle = result.handle();
        int h = handle.rowLayout().hidden();
        float[] factor = new float[handle.recvRowSpan()];
        for (int i = 0; i < result.numExpertRows(); i++) {
            factor[handle.expertRow(i)] += handle.expertWeight(i);
        }
        float[] row = new float[h];
        for (int s = 0; s < handle.sources(); s++) {
            for (int r = 0; r < handle.recvRowsFrom(s); r++) {
                int j = handle.recvRowIndex(s, r);
                result.recvToken(j, row, 0);
                for (int c = 0; c < h; c++) {
                    row[c] = row[c] * (factor[j] * (rank + 1));
                }
                DType.BF16.encode(row, 0, h, back, j * h * 2);
            }
        }
    }

    /** Each source's tokens that choose a replica here, in source then token order. */
    private static boolean receivedRight(
            BenchWorkload w,
            int me,
            DispatchResult result,
            DispatchDType dispatchDType,
            Placement placement) {
        float[] row = new float[w.hidden()];
        DispatchHandle handle = result.handle();
        int received = 0;
        for (int src = 0; src < w.worldSize(); src++) {
            int[] ids = BenchRouting.topkIds(w, src);
            DispatchLayout layout = new DispatchLayout(placement, src);
            layout.compute(ids, w.tokens(), w.topK());
            int i = 0;
            for (int tok = 0; tok < w.tokens(); tok++) {
                if (layout.tokenInRank(tok, me)) {
                    if (i == handle.recvRowsFrom(src)) {
                        return false;
                    }
                    result.recvToken(handle.recvRowIndex(src, i++), row, 0);
                    if (!Arrays.equals(row, sentRow(w, src, tok, dispatchDType))) {
                        return false;
                    }
                }
            }
            received += i;
            if (i != handle.recvRowsFrom(src)) {
                return false;
            }
        }
        return received == result.numRecvTokens();
    }

    private static boolean combinedRight(
            BenchWorkload w,
            int me,
            int[] ids,
            FloatBuffer out,
            DispatchDType dispatchDType,
            Placement placement) {
        int k = w.topK();
        DispatchLayout layout = new DispatchLayout(placement, me);
        layout.compute(ids, w.tokens(), k);
        for (int tok = 0; tok < w.tokens(); tok++) {
            float[] sent = sentRow(w, me, tok, dispatchDType);
            for (int c = 0; c < w.hidden(); c++) {
                float val = sent[c];
                float expected = 0;
                for (int d = 0; d < w.worldSize(); d++) {
                    float factor = 0;
                    for (int j = 0; j < k; j++) {
                        factor += layout.chosenRank(tok * k + j) == d ? 1f / k : 0f;
                    }
                    if (factor > 0) {
                        expected += DType.BF16.round(val * (factor * (d + 1)));
                    }
                }
                if (out.get(tok * w.hidden() + c) != expected) {
                    return false;
                }
            }
        }
        return true;
    }

    /**
     * Token {@code tok} of {@code src} as the experts should see it: the bf16 payload, or with FP8
     * its round trip through the scalar kernels.
     */
    static float[] sentRow(BenchWorkload w, int src, int tok, DispatchDType dispatchDType) {
        int h = w.hidden();
        float[] row = new float[h];
        for (int c = 0; c < h; c++) {
            row[c] = DType.BF16.round(BenchRouting.payload(src, tok, c));
        }
        if (dispatchDType == DispatchDType.FP8) {
            // off-heap, as every kernel call in a serving JVM (see DispatchResult)
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment fp32 = arena.allocate((long) h * Float.BYTES);
                MemorySegment.copy(row, 0, fp32, ValueLayout.JAVA_FLOAT, 0, h);
                MemorySegment fp8 = arena.allocate(RowKernels.fp8RowBytes(h));
                ScalarKernels.quantizeFp8(fp32, 0, fp8, 0, h);
                ScalarKernels.dequantizeFp8(fp8, 0, fp32, 0, h);
                MemorySegment.copy(fp32, ValueLayout.JAVA_FLOAT, 0, row, 0, h);
            }
        }
        return row;
    }
}
