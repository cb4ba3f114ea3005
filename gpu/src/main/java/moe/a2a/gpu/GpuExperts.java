package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cublas.CUBLAS_STATUS_ALLOC_FAILED;
import static org.bytedeco.cuda.global.cublas.CUBLAS_STATUS_INVALID_VALUE;
import static org.bytedeco.cuda.global.cublas.CUBLAS_STATUS_NOT_SUPPORTED;
import static org.bytedeco.cuda.global.cublas.CUBLAS_STATUS_SUCCESS;
import static org.bytedeco.cuda.global.cublas.cublasCreate_v2;
import static org.bytedeco.cuda.global.cublas.cublasDestroy_v2;
import static org.bytedeco.cuda.global.cublas.cublasGetStatusString;
import static org.bytedeco.cuda.global.cublas.cublasSetStream_v2;
import static org.bytedeco.cuda.global.cudart.cudaStreamSynchronize;

import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.IntFunction;
import moe.a2a.comm.A2aException;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ExpertWeights;
import moe.a2a.experts.Fp8Expert;
import moe.a2a.experts.WeightSource;
import moe.a2a.kernels.DType;
import org.bytedeco.cuda.cublas.cublasContext;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.FloatPointer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One rank's SwiGLU experts on the GPU: weights held once in device memory, each projection of
 * every local expert as one {@code cublasGemmGroupedBatchedEx} call ({@link GroupedGemms}, fp32
 * accumulate and out) and the activation as one kernel over all rows; where the loaded cuBLAS does
 * not support those types in a grouped call, one {@code cublasGemmBatchedEx} a projection over rows
 * padded to the fullest slot ({@link PaddedGemms}). bf16 rows run bf16 GEMMs; fp32 rows (fp16 and
 * fp32 steps) run fp32 GEMMs ({@link ExpertMath}) on each projection's weights widened to fp32 in
 * scratch just before its call, so no fp32 copy is held. Experts can instead be held as an FP8
 * checkpoint stores them ({@link #heldInFp8}, half the memory): each projection is then made the
 * GEMM's bf16 or fp32 weights in that scratch, for every step. Row-major {@code [n, H]} activations
 * are column-major {@code [H, n]} to cuBLAS, so {@code X·Wᵀ} is one GEMM with {@code W} transposed.
 * Owned by one thread; runs on the stream passed to {@link #forward}.
 */
public final class GpuExperts implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(GpuExperts.class);

    private final CudaKernels kernels;
    private final int hidden;
    private final int ffn;
    private final CudaMemory[] w1;
    private final CudaMemory[] w3;
    private final CudaMemory[] w2;

    /**
     * 0 when the projections are held in bf16; else the tile of the FP8 codes they are held as,
     * each projection's codes followed by its tiles' fp32 scales ({@link
     * ProjectionUploads#scalesAt}).
     */
    private final int fp8Block;

    /** The expert each slot holds, -1 where the slots came without ids (a shared expert). */
    private final int[] expertIds;

    /**
     * Bytes uploaded to build this: the weights shared with the experts it was restaged from count
     * nothing.
     */
    private final long loadedBytes;

    private final boolean tf32;
    private final long[] w1Addresses;
    private final long[] w3Addresses;
    private final long[] w2Addresses;
    private final FloatPointer one = new FloatPointer(1).put(1f);
    private final FloatPointer zero = new FloatPointer(1).put(0f);

    /** The math of fp32 rows: fp32, or TF32 when the worker allows it. */
    private final ExpertMath fp32Math;

    /** Loads {@code layer}'s experts of {@code rank} under {@code placement}, by local slot. */
    public GpuExperts(
            WeightSource weights,
            int layer,
            Placement placement,
            int rank,
            boolean tf32,
            CudaKernels kernels) {
        this(weights, layer, placement.expertsOf(rank), 0, tf32, kernels);
    }

    /**
     * As {@link #GpuExperts(WeightSource, int, Placement, int, boolean, CudaKernels)}, the
     * projections held as the source stores them in FP8 (half the memory of bf16): each one's codes
     * are made the GEMM's weights in scratch ({@code fp8_weights}) just before its call, the same
     * values as the bf16 ones held otherwise.
     *
     * @throws IllegalArgumentException when the source does not store its experts in FP8
     */
    public static GpuExperts heldInFp8(
            WeightSource weights,
            int layer,
            Placement placement,
            int rank,
            boolean tf32,
            CudaKernels kernels) {
        int[] ids = placement.expertsOf(rank);
        int block = ids.length == 0 ? 1 : stored(weights, layer, ids[0]).w1().block();
        return new GpuExperts(weights, layer, ids, block, tf32, kernels);
    }

    /**
     * Slot {@code s} holds expert {@code ids[s]} of {@code layer}, in FP8 of tile {@code block}
     * unless 0.
     */
    private GpuExperts(
            WeightSource weights,
            int layer,
            int[] ids,
            int block,
            boolean tf32,
            CudaKernels kernels) {
        this(
                ids,
                new CudaMemory[ids.length][],
                Source.of(weights, layer, block),
                null,
                weights.hidden(),
                weights.ffn(),
                tf32,
                kernels);
    }

    /** Where slots' experts come from: fp32 weights to round to bf16, or FP8 codes as stored. */
    private record Source(
            IntFunction<ExpertWeights> fp32, @Nullable IntFunction<Fp8Expert> fp8, int block) {
        /** {@code layer}'s experts of {@code weights}, in FP8 of tile {@code block} unless 0. */
        static Source of(WeightSource weights, int layer, int block) {
            return new Source(
                    e -> weights.expert(layer, e),
                    block > 0 ? e -> stored(weights, layer, e) : null,
                    block);
        }
    }

    private static Fp8Expert stored(WeightSource weights, int layer, int expert) {
        Fp8Expert e = weights.fp8Expert(layer, expert);
        if (e == null) {
            throw new IllegalArgumentException(
                    "expert "
                            + expert
                            + " of layer "
                            + layer
                            + ": not stored in FP8 (expected: an FP8 checkpoint, to hold its"
                            + " experts in FP8)");
        }
        return e;
    }

    /**
     * Loads the experts {@code slots} holds, one a slot, each {@code [ffn, hidden]} (a layer's
     * shared expert alone, say, of its own width); fp32 rows run TF32 GEMMs when {@code tf32}.
     */
    GpuExperts(ExpertWeights[] slots, int hidden, int ffn, boolean tf32, CudaKernels kernels) {
        this(
                unknown(slots.length),
                new CudaMemory[slots.length][],
                new Source(s -> slots[s], null, 0),
                null,
                hidden,
                ffn,
                tf32,
                kernels);
    }

    /** {@code n} slots of unknown experts. */
    private static int[] unknown(int n) {
        int[] ids = new int[n];
        Arrays.fill(ids, -1);
        return ids;
    }

    /**
     * Slot {@code s} holds expert {@code expertIds[s]}: its projections {@code held[s]} when given
     * (shared with the experts this is restaged from), else loaded from {@code source} (by expert
     * id, or by slot where the ids are unknown) and uploaded, in order on {@code stream} when
     * given.
     */
    private GpuExperts(
            int[] expertIds,
            CudaMemory[][] held,
            Source source,
            @Nullable CUstream_st stream,
            int hidden,
            int ffn,
            boolean tf32,
            CudaKernels kernels) {
        this.kernels = kernels;
        this.hidden = hidden;
        this.ffn = ffn;
        this.tf32 = tf32;
        this.fp32Math = tf32 ? ExpertMath.TF32 : ExpertMath.FP32;
        this.expertIds = expertIds.clone();
        this.fp8Block = source.block();
        int count = expertIds.length;
        w1 = new CudaMemory[count];
        w3 = new CudaMemory[count];
        w2 = new CudaMemory[count];
        long loaded = 0;
        try {
            for (int s = 0; s < count; s++) {
                CudaMemory[] h = held[s];
                for (int before = 0; h == null && before < s; before++) {
                    if (expertIds[s] >= 0 && expertIds[before] == expertIds[s]) {
                        // two slots of one expert: its weights once
                        h = new CudaMemory[] {w1[before], w3[before], w2[before]};
                    }
                }
                if (h != null) {
                    w1[s] = h[0];
                    w3[s] = h[1];
                    w2[s] = h[2];
                    continue;
                }
                int id = expertIds[s] >= 0 ? expertIds[s] : s;
                IntFunction<Fp8Expert> fp8 = source.fp8();
                if (fp8 != null) {
                    Fp8Expert e = fp8.apply(id);
                    w1[s] = ProjectionUploads.fp8(e.w1(), stream);
                    w3[s] = ProjectionUploads.fp8(e.w3(), stream);
                    w2[s] = ProjectionUploads.fp8(e.w2(), stream);
                } else {
                    ExpertWeights e = source.fp32().apply(id);
                    w1[s] = ProjectionUploads.bf16(e.w1(), stream);
                    w3[s] = ProjectionUploads.bf16(e.w3(), stream);
                    w2[s] = ProjectionUploads.bf16(e.w2(), stream);
                }
                loaded += w1[s].capacity() + w3[s].capacity() + w2[s].capacity();
            }
        } catch (RuntimeException e) {
            Set<CudaMemory> shared = Collections.newSetFromMap(new IdentityHashMap<>());
            for (CudaMemory[] h : held) {
                if (h != null) {
                    shared.addAll(Arrays.asList(h));
                }
            }
            // uploads on a stream of their own are a staging's, on the loader's thread
            CaptureTurns.free(stream != null, () -> ProjectionUploads.freeBut(shared, w1, w3, w2));
            throw e;
        }
        this.loadedBytes = loaded;
        this.w1Addresses = addresses(w1);
        this.w3Addresses = addresses(w3);
        this.w2Addresses = addresses(w2);
    }

    /**
     * These experts as the slots {@code next} (expert ids) of another placement need them: the
     * projections of experts held here are shared, the others loaded from {@code layer} of {@code
     * weights}, held as these are (bf16 or FP8), and uploaded in order on {@code stream}, which
     * this waits for. Until one of the two is {@link #retire}d, both serve. Any thread whose
     * current device is this one's.
     */
    GpuExperts restaged(int[] next, WeightSource weights, int layer, CUstream_st stream) {
        CudaMemory[][] held = new CudaMemory[next.length][];
        for (int s = 0; s < next.length; s++) {
            for (int h = 0; h < expertIds.length && held[s] == null; h++) {
                if (expertIds[h] == next[s]) {
                    held[s] = new CudaMemory[] {w1[h], w3[h], w2[h]};
                }
            }
        }
        GpuExperts restaged =
                new GpuExperts(
                        next,
                        held,
                        Source.of(weights, layer, fp8Block),
                        stream,
                        hidden,
                        ffn,
                        tf32,
                        kernels);
        CudaCheck.check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(weights)");
        return restaged;
    }

    /**
     * Frees what {@code successor} does not share: the projections of experts it no longer holds.
     * Between steps; this one is not used again (its argument lists in a {@link Scratch} are the
     * scratch owner's to {@link Scratch#forget}).
     */
    void retire(GpuExperts successor) {
        Set<CudaMemory> kept = Collections.newSetFromMap(new IdentityHashMap<>());
        kept.addAll(Arrays.asList(successor.w1));
        kept.addAll(Arrays.asList(successor.w3));
        kept.addAll(Arrays.asList(successor.w2));
        ProjectionUploads.freeBut(kept, w1, w3, w2);
    }

    /**
     * Device bytes of one expert's projections as held here (bf16, or FP8 codes and scales); 0
     * without slots.
     */
    long bytesPerExpert() {
        return w1.length == 0 ? 0 : w1[0].capacity() + w3[0].capacity() + w2[0].capacity();
    }

    /** Bytes uploaded to build these experts; those shared with the ones restaged from count 0. */
    long loadedBytes() {
        return loadedBytes;
    }

    /**
     * The device memory between the projections, the grouped GEMMs' argument lists of each layer
     * that runs in it, and the cuBLAS handle they run on (with its workspace). Layers run one after
     * another on one stream, so a rank's steps share one across all its layers (the memory a step
     * needs once, not once a layer). A step captured as a CUDA graph keeps the addresses it was
     * captured with, so it brings its own, which nothing else grows, frees or rewrites; so does a
     * stream that runs beside another (a shared expert's): a handle's workspace is not to be shared
     * by two streams at once.
     */
    public static final class Scratch implements AutoCloseable {
        private final cublasContext handle = new cublasContext();

        private final CudaMemory gate = CudaMemory.device();
        private final CudaMemory up = CudaMemory.device();
        private final CudaMemory act = CudaMemory.device();

        /** fp32 GEMMs: one projection of every slot, widened from bf16. */
        private final CudaMemory weights = CudaMemory.device();

        private final Map<Calls, GroupedGemms> calls = new HashMap<>();

        /** Where no grouped call runs: the rows and outputs padded for a batched call. */
        private final CudaMemory paddedRows = CudaMemory.device();

        private final CudaMemory paddedOut = CudaMemory.device();
        private final Map<Calls, PaddedGemms> padded = new HashMap<>();

        /** The grouped calls of one layer's experts in one math (identity of the experts). */
        private record Calls(GpuExperts experts, ExpertMath math) {}

        /** Frees the argument lists planned for {@code experts}, which are retired. */
        void forget(GpuExperts experts) {
            for (Map<Calls, ? extends AutoCloseable> lists : List.of(calls, padded)) {
                lists.entrySet()
                        .removeIf(
                                e -> {
                                    if (e.getKey().experts() != experts) {
                                        return false;
                                    }
                                    close(e.getValue());
                                    return true;
                                });
            }
        }

        private static void close(AutoCloseable lists) {
            try {
                lists.close();
            } catch (Exception e) {
                throw new IllegalStateException("closing GEMM argument lists", e);
            }
        }

        /**
         * The cuBLAS handle, made by the first call (out of device memory: {@link
         * OutOfDeviceMemoryException}).
         */
        cublasContext handle() {
            if (handle.isNull()) {
                int status = cublasCreate_v2(handle);
                if (status == CUBLAS_STATUS_ALLOC_FAILED) {
                    throw new OutOfDeviceMemoryException("cublasCreate: out of device memory");
                }
                check(status, "cublasCreate");
            }
            return handle;
        }

        @Override
        public void close() {
            if (!handle.isNull()) {
                cublasDestroy_v2(handle);
                handle.setNull();
            }
            gate.close();
            up.close();
            act.close();
            weights.close();
            paddedRows.close();
            paddedOut.close();
            for (GroupedGemms g : calls.values()) {
                g.close();
            }
            for (PaddedGemms g : padded.values()) {
                g.close();
            }
        }
    }

    /**
     * {@code out[i] = W2 · (silu(W1·x_i) ⊙ (W3·x_i))} for the rows of {@code rows} in {@code dtype}
     * (bf16, or fp32 for the fp32 GEMMs), grouped by slot ({@code rowsPerSlot[s]} rows of slot
     * {@code s}, in order), in {@code scratch}: one grouped GEMM call a projection for every slot
     * with rows, and one activation over all rows. {@code out} is fp32 {@code [n, H]}.
     */
    public void forward(
            CudaMemory rows,
            DType dtype,
            int[] rowsPerSlot,
            CudaMemory out,
            CUstream_st stream,
            Scratch scratch) {
        if (dtype == DType.FP16) {
            throw new IllegalArgumentException(
                    "rows.dtype: FP16 (expected: BF16, or FP32 for the fp32 GEMMs)");
        }
        ExpertMath math = dtype == DType.BF16 ? ExpertMath.BF16 : fp32Math;
        long total = 0;
        for (int n : rowsPerSlot) {
            total += n;
        }
        if (total == 0) {
            return;
        }
        cublasContext handle = scratch.handle();
        check(cublasSetStream_v2(handle, stream), "cublasSetStream");
        scratch.gate.ensure(total * ffn * Float.BYTES);
        scratch.up.ensure(total * ffn * Float.BYTES);
        scratch.act.ensure(total * ffn * math.inputBytes());
        if (staged(math)) {
            scratch.weights.ensure((long) w1.length * hidden * ffn * math.inputBytes());
        }
        if (!GroupedGemms.refused(math)
                && grouped(rows, math, rowsPerSlot, out, stream, scratch, total)) {
            return;
        }
        padded(rows, math, rowsPerSlot, out, stream, scratch);
    }

    /**
     * The three batched calls over the padded layout ({@link PaddedGemms}), where the loaded cuBLAS
     * runs no grouped call in this math.
     */
    private void padded(
            CudaMemory rows,
            ExpertMath math,
            int[] rowsPerSlot,
            CudaMemory out,
            CUstream_st stream,
            Scratch scratch) {
        PaddedGemms calls =
                scratch.padded.computeIfAbsent(
                        new Scratch.Calls(this, math),
                        c -> new PaddedGemms(hidden, ffn, w1.length, math));
        long p = PaddedGemms.paddedRows(rowsPerSlot);
        scratch.paddedRows.ensure(p * hidden * math.inputBytes());
        scratch.gate.ensure(p * ffn * Float.BYTES);
        scratch.up.ensure(p * ffn * Float.BYTES);
        scratch.act.ensure(p * ffn * math.inputBytes());
        scratch.paddedOut.ensure(p * hidden * Float.BYTES);
        long[][] weights = weightAddresses(math, scratch);
        calls.plan(
                rowsPerSlot,
                weights[0],
                weights[1],
                weights[2],
                address(scratch.paddedRows),
                address(scratch.gate),
                address(scratch.up),
                address(scratch.act),
                address(scratch.paddedOut));
        calls.upload(stream);
        calls.pad(kernels, rows, scratch.paddedRows, stream);
        int status =
                project(calls::run, "cublasGemmBatchedEx", math, rowsPerSlot, p, scratch, stream);
        if (status == CUBLAS_STATUS_NOT_SUPPORTED) {
            throw new A2aException(
                    "cublas: neither cublasGemmGroupedBatchedEx nor cublasGemmBatchedEx supports "
                            + math
                            + " GEMMs here");
        }
        check(status, "cublasGemmBatchedEx(gate)");
        calls.unpad(kernels, scratch.paddedOut, out, stream);
    }

    /**
     * The three grouped calls; false, having run nothing, when the loaded cuBLAS does not support
     * them for these types, after which this layer runs a GEMM a slot in that math.
     */
    private boolean grouped(
            CudaMemory rows,
            ExpertMath math,
            int[] rowsPerSlot,
            CudaMemory out,
            CUstream_st stream,
            Scratch scratch,
            long total) {
        GroupedGemms calls =
                scratch.calls.computeIfAbsent(
                        new Scratch.Calls(this, math),
                        c -> new GroupedGemms(hidden, ffn, w1.length, math));
        long[][] weights = weightAddresses(math, scratch);
        calls.plan(
                rowsPerSlot,
                weights[0],
                weights[1],
                weights[2],
                address(rows),
                address(scratch.gate),
                address(scratch.up),
                address(scratch.act),
                address(out));
        calls.upload(stream);
        int status =
                project(
                        calls::run,
                        "cublasGemmGroupedBatchedEx",
                        math,
                        rowsPerSlot,
                        total,
                        scratch,
                        stream);
        if (status != CUBLAS_STATUS_SUCCESS) {
            // the grouped call's type table is narrower than the batched one's, and cuBLAS may
            // answer a combination it does not list with either status
            GroupedGemms.refuse(math);
            LOG.info(
                    "cublasGemmGroupedBatchedEx refused {} GEMMs here ({}): experts run batched"
                            + " GEMMs over rows padded to the fullest slot",
                    math,
                    cublasGetStatusString(status).getString());
            return false;
        }
        return true;
    }

    /** One projection's call for every slot with rows; returns cuBLAS's status. */
    private interface Projection {
        int run(cublasContext handle, int projection);
    }

    /**
     * Gate and up, the activation over {@code rows} rows, down, each projection's weights widened
     * first for fp32 GEMMs; returns {@code CUBLAS_STATUS_SUCCESS}, or, having run nothing else, the
     * first call's status when cuBLAS refused it as not supported or invalid (for the caller to
     * judge: a type combination the call lacks, or a fault).
     */
    private int project(
            Projection calls,
            String call,
            ExpertMath math,
            int[] rowsPerSlot,
            long rows,
            Scratch scratch,
            CUstream_st stream) {
        widen(math, w1, rowsPerSlot, scratch, stream);
        cublasContext handle = scratch.handle();
        int status = calls.run(handle, GroupedGemms.GATE);
        if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE) {
            return status;
        }
        check(status, call + "(gate)");
        widen(math, w3, rowsPerSlot, scratch, stream);
        check(calls.run(handle, GroupedGemms.UP), call + "(up)");
        kernels.siluMul(
                scratch.gate.at(0),
                scratch.up.at(0),
                scratch.act.at(0),
                rows * ffn,
                math.elements(),
                stream);
        widen(math, w2, rowsPerSlot, scratch, stream);
        check(calls.run(handle, GroupedGemms.DOWN), call + "(down)");
        return CUBLAS_STATUS_SUCCESS;
    }

    /**
     * Whether {@code math}'s GEMMs read weights made in scratch rather than the ones held: the bf16
     * ones widened for fp32 GEMMs, or FP8 ones made ready for any.
     */
    private boolean staged(ExpertMath math) {
        return fp8Block > 0 || math != ExpertMath.BF16;
    }

    /**
     * Makes one projection of every slot with rows the GEMM's weights in the scratch, at its slot's
     * place, where {@code math} reads them from there ({@link #staged}); nothing otherwise. On the
     * stream, so the previous call has read what it overwrites.
     */
    private void widen(
            ExpertMath math,
            CudaMemory[] projection,
            int[] rowsPerSlot,
            Scratch scratch,
            CUstream_st stream) {
        for (int s = 0; staged(math) && s < rowsPerSlot.length; s++) {
            if (rowsPerSlot[s] > 0) {
                weights(math, projection, s, scratch, stream);
            }
        }
    }

    /**
     * Slot {@code s}'s weights of {@code projection} made in the scratch at the slot's place, in
     * {@code math}'s element type: the bf16 ones widened, or the FP8 ones dequantized.
     */
    private void weights(
            ExpertMath math, CudaMemory[] projection, int s, Scratch scratch, CUstream_st stream) {
        long elements = (long) hidden * ffn;
        BytePointer at = scratch.weights.at(s * elements * math.inputBytes());
        if (fp8Block == 0) {
            kernels.bf16ToFp32(projection[s].at(0), at, elements, stream);
            return;
        }
        int rows = projection == w2 ? hidden : ffn;
        int cols = projection == w2 ? ffn : hidden;
        kernels.fp8Weights(
                projection[s].at(0),
                projection[s].at(ProjectionUploads.scalesAt(rows, cols)),
                at,
                rows,
                cols,
                fp8Block,
                math.elements(),
                stream);
    }

    /**
     * Each projection's weights as {@code math}'s calls read them, by slot: the bf16 ones held, or
     * the same slots of the scratch for every projection, rewritten before each call.
     */
    private long[][] weightAddresses(ExpertMath math, Scratch scratch) {
        if (!staged(math)) {
            return new long[][] {w1Addresses, w3Addresses, w2Addresses};
        }
        long[] made = slotAddresses(scratch.weights, math.inputBytes());
        return new long[][] {made, made, made};
    }

    /** Where each slot's weights made in {@code weights} sit, elements of {@code bytes}. */
    private long[] slotAddresses(CudaMemory weights, int bytes) {
        long[] out = new long[w1.length];
        for (int s = 0; s < out.length; s++) {
            out[s] = address(weights) + (long) s * hidden * ffn * bytes;
        }
        return out;
    }

    private static long address(CudaMemory memory) {
        return memory.at(0).address();
    }

    private static long[] addresses(CudaMemory[] memory) {
        long[] out = new long[memory.length];
        for (int i = 0; i < memory.length; i++) {
            out[i] = address(memory[i]);
        }
        return out;
    }

    private static void check(int status, String call) {
        if (status != CUBLAS_STATUS_SUCCESS) {
            throw new A2aException(
                    "cublas call failed: "
                            + call
                            + " returned "
                            + cublasGetStatusString(status).getString()
                            + " ("
                            + status
                            + ")");
        }
    }

    @Override
    public void close() {
        for (CudaMemory[] ws : new CudaMemory[][] {w1, w3, w2}) {
            for (CudaMemory w : ws) {
                w.close();
            }
        }
    }
}
