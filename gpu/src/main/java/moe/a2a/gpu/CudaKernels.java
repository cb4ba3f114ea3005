package moe.a2a.gpu;

import moe.a2a.kernels.DType;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;
import org.jspecify.annotations.Nullable;

/**
 * The data path's kernels ({@code kernels.cu}): pack and grouping (row gather), combine's weighted
 * sum and its accumulation at the source, SwiGLU's activation, the low-latency mode's grouping from
 * region headers, FP8 dispatch's quantization and dequantization, the shared expert's (gated)
 * addition, and weights held in FP8 made ready for a GEMM: each launched on the caller's stream
 * with its grid and arguments laid out here ({@link KernelModule} runs them on the device). Owned
 * by one thread.
 */
public final class CudaKernels implements AutoCloseable {
    /**
     * Threads a block in every launch: add_shared keeps a partial sum a thread in {@code
     * partial[256]} and halves the block to reduce them, so a power of two, at most 256.
     */
    static final int THREADS = 256;

    /** gather_rows copies a row a warp. */
    private static final int ROWS_PER_GATHER_BLOCK = THREADS / 32;

    private final KernelLauncher launcher;

    CudaKernels(KernelLauncher launcher) {
        this.launcher = launcher;
    }

    /** Compiles and loads the kernels for {@code device} (the current device of this thread). */
    public static CudaKernels load(int device) {
        return new CudaKernels(KernelModule.load(device));
    }

    /** The architecture the kernels were compiled for, e.g. {@code sm_90}. */
    public String arch() {
        return launcher.arch();
    }

    /** {@code dst[r] = src[index[r]]} for {@code rows} rows of {@code rowBytes}. */
    public void gatherRows(
            BytePointer src,
            BytePointer index,
            BytePointer dst,
            int rowBytes,
            int rows,
            CUstream_st stream) {
        if (rows > 0) {
            launcher.launch(
                    "gather_rows",
                    (rows + ROWS_PER_GATHER_BLOCK - 1) / ROWS_PER_GATHER_BLOCK,
                    stream,
                    addr(src),
                    addr(index),
                    addr(dst),
                    arg(rowBytes),
                    arg(rows));
        }
    }

    /**
     * The code kernels.cu names a row's element type by ({@code DTYPE_BF16}, {@code DTYPE_FP16},
     * {@code DTYPE_FP32}).
     */
    static int code(DType dtype) {
        return switch (dtype) {
            case BF16 -> 0;
            case FP16 -> 1;
            case FP32 -> 2;
        };
    }

    /**
     * {@code dst[r]} = the FP8 row ({@code Fp8RowLayout}) of row {@code index[r]} of {@code src}
     * (in {@code dtype}), bit for bit the CPU path's quantization: FP8 dispatch's pack.
     */
    public void quantizeFp8Rows(
            BytePointer src,
            BytePointer index,
            BytePointer dst,
            int hidden,
            int rows,
            DType dtype,
            CUstream_st stream) {
        rowsOf("quantize_fp8_rows", src, index, dst, hidden, rows, dtype, stream);
    }

    /**
     * {@code dst[r]} = FP8 row {@code index[r]} of {@code src}, dequantized by its block scales, in
     * {@code dtype} (bf16 or fp32): FP8 dispatch's grouping by local expert.
     */
    public void dequantizeFp8Rows(
            BytePointer src,
            BytePointer index,
            BytePointer dst,
            int hidden,
            int rows,
            DType dtype,
            CUstream_st stream) {
        rowsOf("dequantize_fp8_rows", src, index, dst, hidden, rows, dtype, stream);
    }

    /**
     * {@code dst[r]} = fp32 of row {@code index[r]} of {@code src} (row {@code r} when {@code
     * index} is null), rows in {@code dtype}: the grouping of fp16 and fp32 steps.
     */
    public void widenRows(
            BytePointer src,
            @Nullable BytePointer index,
            BytePointer dst,
            int hidden,
            int rows,
            DType dtype,
            CUstream_st stream) {
        rowsOf("widen_rows", src, index, dst, hidden, rows, dtype, stream);
    }

    /**
     * {@code out} = the {@code [rows, cols]} weight held in FP8 ({@code codes}, and one fp32 scale
     * a {@code block × block} tile in {@code scales}), in {@code dtype} (bf16 or fp32): a
     * projection's weights for its GEMM.
     */
    public void fp8Weights(
            BytePointer codes,
            BytePointer scales,
            BytePointer out,
            int rows,
            int cols,
            int block,
            DType dtype,
            CUstream_st stream) {
        launcher.launch(
                "fp8_weights",
                rows,
                stream,
                addr(codes),
                addr(scales),
                addr(out),
                arg(rows),
                arg(cols),
                arg(block),
                arg(code(dtype)));
    }

    /** One block per row of {@code rows}: the row kernels' shared signature. */
    private void rowsOf(
            String kernel,
            BytePointer src,
            @Nullable BytePointer index,
            BytePointer dst,
            int hidden,
            int rows,
            DType dtype,
            CUstream_st stream) {
        if (rows > 0) {
            launcher.launch(
                    kernel,
                    rows,
                    stream,
                    addr(src),
                    index == null ? new LongPointer(1).put(0L) : addr(index),
                    addr(dst),
                    arg(hidden),
                    arg(rows),
                    arg(code(dtype)));
        }
    }

    /**
     * Adds a layer's shared expert's fp32 rows {@code shared} into the combined {@code out}, each
     * token's scaled by {@code sigmoid(gate · x)} when {@code gate} (fp32 {@code [H]}) is given;
     * the tokens {@code x} in {@code dtype}.
     */
    public void addShared(
            BytePointer shared,
            BytePointer x,
            @Nullable BytePointer gate,
            BytePointer out,
            int hidden,
            int tokens,
            DType dtype,
            CUstream_st stream) {
        if (tokens > 0) {
            launcher.launch(
                    "add_shared",
                    tokens,
                    stream,
                    addr(shared),
                    addr(x),
                    gate == null ? new LongPointer(1).put(0L) : addr(gate),
                    addr(out),
                    arg(hidden),
                    arg(tokens),
                    arg(code(dtype)));
        }
    }

    /**
     * Expert side of combine: rows, in {@code dtype}, of each received token's weighted expert
     * outputs.
     */
    public void weightedSum(
            BytePointer expertOut,
            BytePointer start,
            BytePointer row,
            BytePointer weight,
            BytePointer out,
            int hidden,
            int tokens,
            DType dtype,
            CUstream_st stream) {
        if (tokens > 0) {
            launcher.launch(
                    "weighted_sum",
                    tokens,
                    stream,
                    addr(expertOut),
                    addr(start),
                    addr(row),
                    addr(weight),
                    addr(out),
                    arg(hidden),
                    arg(tokens),
                    arg(code(dtype)));
        }
    }

    /** Source side of combine: each token's returned rows (in {@code dtype}) summed into fp32. */
    public void accumulate(
            BytePointer rows,
            BytePointer start,
            BytePointer index,
            BytePointer out,
            int hidden,
            int tokens,
            DType dtype,
            CUstream_st stream) {
        if (tokens > 0) {
            launcher.launch(
                    "accumulate",
                    tokens,
                    stream,
                    addr(rows),
                    addr(start),
                    addr(index),
                    addr(out),
                    arg(hidden),
                    arg(tokens),
                    arg(code(dtype)));
        }
    }

    /**
     * Low-latency grouping from the received regions' headers (one block): each local slot's rows
     * ({@code groupIndex}, {@code slots * sources * bound}), each received row's combine entries
     * ({@code start}, {@code entryRow}, {@code entryWeight}) and each source's count ({@code
     * received}). See {@code ll_group} in kernels.cu.
     */
    public void llGroup(
            BytePointer recv,
            long regionBytes,
            long headerOffset,
            int regionRows,
            int sources,
            int bound,
            int topK,
            int slots,
            BytePointer groupIndex,
            BytePointer start,
            BytePointer entryRow,
            BytePointer entryWeight,
            BytePointer received,
            CUstream_st stream) {
        launcher.launch(
                "ll_group",
                1,
                stream,
                addr(recv),
                new LongPointer(1).put(regionBytes),
                new LongPointer(1).put(headerOffset),
                arg(regionRows),
                arg(sources),
                arg(bound),
                arg(topK),
                arg(slots),
                addr(groupIndex),
                addr(start),
                addr(entryRow),
                addr(entryWeight),
                addr(received));
    }

    /**
     * {@code out = silu(gate) * up} over {@code n} fp32 elements, {@code out} rounded to bf16 for
     * bf16 GEMMs or fp32 for the others ({@code activation}).
     */
    public void siluMul(
            BytePointer gate,
            BytePointer up,
            BytePointer out,
            long n,
            DType activation,
            CUstream_st stream) {
        if (n > 0) {
            int blocks = (int) ((n + THREADS - 1) / THREADS);
            launcher.launch(
                    activation == DType.BF16 ? "silu_mul_bf16" : "silu_mul_fp32",
                    blocks,
                    stream,
                    addr(gate),
                    addr(up),
                    addr(out),
                    new LongPointer(1).put(n));
        }
    }

    /** {@code out = fp32(in)} over {@code n} bf16 elements. */
    public void bf16ToFp32(BytePointer in, BytePointer out, long n, CUstream_st stream) {
        if (n > 0) {
            int blocks = (int) ((n + THREADS - 1) / THREADS);
            launcher.launch(
                    "bf16_to_fp32", blocks, stream, addr(in), addr(out), new LongPointer(1).put(n));
        }
    }

    @Override
    public void close() {
        launcher.close();
    }

    /** A device address (with the pointer's byte offset applied) as a kernel argument. */
    private static LongPointer addr(BytePointer p) {
        return new LongPointer(1).put(p.address() + p.position());
    }

    private static IntPointer arg(int value) {
        return new IntPointer(1).put(value);
    }
}
