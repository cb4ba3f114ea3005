package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cudart.cuLaunchKernel;
import static org.bytedeco.cuda.global.cudart.cuModuleGetFunction;
import static org.bytedeco.cuda.global.cudart.cuModuleLoadData;
import static org.bytedeco.cuda.global.cudart.cuModuleUnload;
import static org.bytedeco.cuda.global.cudart.cudaDevAttrComputeCapabilityMajor;
import static org.bytedeco.cuda.global.cudart.cudaDevAttrComputeCapabilityMinor;
import static org.bytedeco.cuda.global.cudart.cudaDeviceGetAttribute;
import static org.bytedeco.cuda.global.cudart.cudaFree;
import static org.bytedeco.cuda.global.nvrtc.NVRTC_SUCCESS;
import static org.bytedeco.cuda.global.nvrtc.nvrtcCompileProgram;
import static org.bytedeco.cuda.global.nvrtc.nvrtcCreateProgram;
import static org.bytedeco.cuda.global.nvrtc.nvrtcDestroyProgram;
import static org.bytedeco.cuda.global.nvrtc.nvrtcGetCUBIN;
import static org.bytedeco.cuda.global.nvrtc.nvrtcGetCUBINSize;
import static org.bytedeco.cuda.global.nvrtc.nvrtcGetErrorString;
import static org.bytedeco.cuda.global.nvrtc.nvrtcGetProgramLog;
import static org.bytedeco.cuda.global.nvrtc.nvrtcGetProgramLogSize;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import moe.a2a.comm.A2aException;
import moe.a2a.kernels.DType;
import org.bytedeco.cuda.cudart.CUfunc_st;
import org.bytedeco.cuda.cudart.CUmod_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.nvrtc._nvrtcProgram;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;
import org.bytedeco.javacpp.SizeTPointer;
import org.jspecify.annotations.Nullable;

/**
 * The data path's kernels ({@code kernels.cu}): pack and grouping (row gather), combine's weighted
 * sum and its accumulation at the source, SwiGLU's activation, the low-latency mode's grouping from
 * region headers, FP8 dispatch's quantization and dequantization, the shared expert's (gated)
 * addition, and weights held in FP8 made ready for a GEMM. Compiled once by NVRTC straight to CUBIN
 * for this device's architecture (so the driver never JIT-compiles PTX), loaded with the driver
 * API, launched on the caller's stream. Owned by one thread.
 */
public final class CudaKernels implements AutoCloseable {
    /**
     * Threads a block in every launch: add_shared keeps a partial sum a thread in {@code
     * partial[256]} and halves the block to reduce them, so a power of two, at most 256.
     */
    static final int THREADS = 256;

    private final CUmod_st module;
    private final CUfunc_st gatherRows;
    private final CUfunc_st weightedSum;
    private final CUfunc_st accumulate;
    private final CUfunc_st siluMul;
    private final CUfunc_st siluMulFp32;
    private final CUfunc_st widen;
    private final CUfunc_st widenRows;
    private final CUfunc_st llGroup;
    private final CUfunc_st quantizeFp8;
    private final CUfunc_st dequantizeFp8;
    private final CUfunc_st addShared;
    private final CUfunc_st fp8Weights;
    private final String arch;

    private CudaKernels(CUmod_st module, String arch) {
        this.module = module;
        this.arch = arch;
        this.gatherRows = function(module, "gather_rows");
        this.weightedSum = function(module, "weighted_sum");
        this.accumulate = function(module, "accumulate");
        this.siluMul = function(module, "silu_mul_bf16");
        this.siluMulFp32 = function(module, "silu_mul_fp32");
        this.widen = function(module, "bf16_to_fp32");
        this.widenRows = function(module, "widen_rows");
        this.llGroup = function(module, "ll_group");
        this.quantizeFp8 = function(module, "quantize_fp8_rows");
        this.dequantizeFp8 = function(module, "dequantize_fp8_rows");
        this.addShared = function(module, "add_shared");
        this.fp8Weights = function(module, "fp8_weights");
    }

    /** Compiles and loads the kernels for {@code device} (the current device of this thread). */
    public static CudaKernels load(int device) {
        int[] major = new int[1];
        int[] minor = new int[1];
        CudaCheck.check(
                cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, device),
                "cudaDeviceGetAttribute");
        CudaCheck.check(
                cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, device),
                "cudaDeviceGetAttribute");
        String arch = "sm_" + major[0] + minor[0];
        // The runtime makes the device's primary context current; the driver calls below use it.
        CudaCheck.check(cudaFree(new Pointer()), "cudaFree(NULL)");
        byte[] cubin = compile(source(), arch);
        CUmod_st module = new CUmod_st();
        driver(cuModuleLoadData(module, new BytePointer(cubin)), "cuModuleLoadData");
        return new CudaKernels(module, arch);
    }

    /** The architecture the kernels were compiled for, e.g. {@code sm_90}. */
    public String arch() {
        return arch;
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
            launch(
                    gatherRows,
                    rows,
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
        rowsOf(quantizeFp8, src, index, dst, hidden, rows, dtype, stream);
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
        rowsOf(dequantizeFp8, src, index, dst, hidden, rows, dtype, stream);
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
        rowsOf(widenRows, src, index, dst, hidden, rows, dtype, stream);
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
        launch(
                fp8Weights,
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
    private static void rowsOf(
            CUfunc_st kernel,
            BytePointer src,
            @Nullable BytePointer index,
            BytePointer dst,
            int hidden,
            int rows,
            DType dtype,
            CUstream_st stream) {
        if (rows > 0) {
            launch(
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
            launch(
                    addShared,
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
            launch(
                    weightedSum,
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
            launch(
                    accumulate,
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
        launch(
                llGroup,
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
            launch(
                    activation == DType.BF16 ? siluMul : siluMulFp32,
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
            launch(widen, blocks, stream, addr(in), addr(out), new LongPointer(1).put(n));
        }
    }

    @Override
    public void close() {
        cuModuleUnload(module);
    }

    /**
     * Launches {@code blocks} blocks of {@link #THREADS}. cuLaunchKernel takes each argument by
     * address, so every argument here is a one-element holder: an {@link IntPointer} or {@link
     * LongPointer} for scalars, and a device address as a {@code LongPointer} ({@link #addr}).
     */
    private static void launch(
            CUfunc_st function, int blocks, CUstream_st stream, Pointer... args) {
        PointerPointer<Pointer> params = new PointerPointer<>(args.length);
        for (int i = 0; i < args.length; i++) {
            params.put(i, args[i]);
        }
        driver(
                cuLaunchKernel(function, blocks, 1, 1, THREADS, 1, 1, 0, stream, params, null),
                "cuLaunchKernel");
    }

    /** A device address (with the pointer's byte offset applied) as a kernel argument. */
    private static LongPointer addr(BytePointer p) {
        return new LongPointer(1).put(p.address() + p.position());
    }

    private static IntPointer arg(int value) {
        return new IntPointer(1).put(value);
    }

    private static CUfunc_st function(CUmod_st module, String name) {
        CUfunc_st f = new CUfunc_st();
        driver(cuModuleGetFunction(f, module, name), "cuModuleGetFunction(" + name + ")");
        return f;
    }

    private static byte[] compile(String source, String arch) {
        _nvrtcProgram program = new _nvrtcProgram();
        nvrtc(
                nvrtcCreateProgram(
                        program,
                        new BytePointer(source),
                        new BytePointer("kernels.cu"),
                        0,
                        (PointerPointer<?>) null,
                        (PointerPointer<?>) null),
                "nvrtcCreateProgram",
                program);
        try {
            PointerPointer<BytePointer> options =
                    new PointerPointer<>(
                            "--gpu-architecture=" + arch, "--fmad=false", "--std=c++17");
            int result = nvrtcCompileProgram(program, 3, options);
            if (result != NVRTC_SUCCESS) {
                SizeTPointer logSize = new SizeTPointer(1);
                nvrtcGetProgramLogSize(program, logSize);
                BytePointer log = new BytePointer(logSize.get());
                nvrtcGetProgramLog(program, log);
                throw new A2aException(
                        "nvrtcCompileProgram("
                                + arch
                                + ") failed: "
                                + nvrtcGetErrorString(result).getString()
                                + "\n"
                                + log.getString());
            }
            SizeTPointer size = new SizeTPointer(1);
            nvrtc(nvrtcGetCUBINSize(program, size), "nvrtcGetCUBINSize", program);
            byte[] cubin = new byte[(int) size.get()];
            nvrtc(nvrtcGetCUBIN(program, cubin), "nvrtcGetCUBIN", program);
            return cubin;
        } finally {
            nvrtcDestroyProgram(program);
        }
    }

    private static String source() {
        try (InputStream in = CudaKernels.class.getResourceAsStream("kernels.cu")) {
            if (in == null) {
                throw new IllegalStateException("kernels.cu missing from the jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void nvrtc(int result, String call, _nvrtcProgram program) {
        if (result != NVRTC_SUCCESS) {
            throw new A2aException(call + " failed: " + nvrtcGetErrorString(result).getString());
        }
    }

    private static void driver(int result, String call) {
        if (result != 0) {
            throw new A2aException(
                    "cuda driver call failed: " + call + " returned CUresult " + result);
        }
    }
}
