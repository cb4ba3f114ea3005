package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cudart.cuGetErrorName;
import static org.bytedeco.cuda.global.cudart.cuLaunchKernel;
import static org.bytedeco.cuda.global.cudart.cuModuleGetFunction;
import static org.bytedeco.cuda.global.cudart.cuModuleLoadData;
import static org.bytedeco.cuda.global.cudart.cuModuleUnload;
import static org.bytedeco.cuda.global.cudart.cudaDevAttrComputeCapabilityMajor;
import static org.bytedeco.cuda.global.cudart.cudaDevAttrComputeCapabilityMinor;
import static org.bytedeco.cuda.global.cudart.cudaDeviceGetAttribute;
import static org.bytedeco.cuda.global.cudart.cudaFree;
import static org.bytedeco.cuda.global.cudart.cudaSetDevice;
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
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import moe.a2a.comm.A2aException;
import org.bytedeco.cuda.cudart.CUfunc_st;
import org.bytedeco.cuda.cudart.CUmod_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.nvrtc._nvrtcProgram;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;
import org.bytedeco.javacpp.SizeTPointer;
import org.jspecify.annotations.Nullable;

/**
 * {@code kernels.cu} compiled once by NVRTC straight to CUBIN for this device's architecture (so
 * the driver never JIT-compiles PTX), loaded with the driver API, every kernel looked up at load.
 */
final class KernelModule implements KernelLauncher {
    private final CUmod_st module;
    private final String arch;

    /** A kernel's definition in kernels.cu: its name. */
    private static final Pattern KERNEL = Pattern.compile("extern \"C\" __global__ void (\\w+)\\(");

    private final Map<String, CUfunc_st> functions = new HashMap<>();

    private KernelModule(CUmod_st module, String arch, String source) {
        this.module = module;
        this.arch = arch;
        // every kernel now, not on its first launch: with lazy module loading the lookup loads the
        // kernel, which may synchronize the context, and mid-step that would sit beside NCCL's
        // kernels; a kernel missing from the CUBIN fails here, at load
        for (String name : kernels(source)) {
            functions.put(name, function(name));
        }
    }

    /** The kernels {@code source} defines, by name. */
    static List<String> kernels(String source) {
        List<String> names = new ArrayList<>();
        Matcher kernel = KERNEL.matcher(source);
        while (kernel.find()) {
            names.add(kernel.group(1));
        }
        return names;
    }

    /**
     * Compiles and loads the kernels for {@code device}, which becomes this thread's current
     * device.
     */
    static KernelModule load(int device) {
        CudaCheck.check(cudaSetDevice(device), "cudaSetDevice(" + device + ")");
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
        String source = source();
        byte[] cubin = compile(source, arch);
        CUmod_st module = new CUmod_st();
        driver(cuModuleLoadData(module, new BytePointer(cubin)), "cuModuleLoadData");
        return new KernelModule(module, arch, source);
    }

    /** kernels.cu as the jar carries it. */
    static String source() {
        try (InputStream in = KernelModule.class.getResourceAsStream("kernels.cu")) {
            if (in == null) {
                throw new IllegalStateException("kernels.cu missing from the jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public String arch() {
        return arch;
    }

    @Override
    public void launch(String kernel, int blocks, @Nullable CUstream_st stream, Pointer... args) {
        PointerPointer<Pointer> params = new PointerPointer<>(args.length);
        for (int i = 0; i < args.length; i++) {
            params.put(i, args[i]);
        }
        CUfunc_st function = functions.get(kernel);
        if (function == null) {
            throw new IllegalArgumentException("kernel: " + kernel + " (not in kernels.cu)");
        }
        try {
            driver(
                    cuLaunchKernel(
                            function,
                            blocks,
                            1,
                            1,
                            CudaKernels.THREADS,
                            1,
                            1,
                            0,
                            stream,
                            params,
                            null),
                    "cuLaunchKernel(" + kernel + ")");
        } finally {
            // params holds only the holders' addresses: the holders must outlive the launch, which
            // copies what they hold, or their deallocator could free one during it
            Reference.reachabilityFence(args);
        }
    }

    @Override
    public void close() {
        cuModuleUnload(module);
    }

    private CUfunc_st function(String name) {
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

    private static void nvrtc(int result, String call, _nvrtcProgram program) {
        if (result != NVRTC_SUCCESS) {
            throw new A2aException(call + " failed: " + nvrtcGetErrorString(result).getString());
        }
    }

    private static void driver(int result, String call) {
        if (result != 0) {
            PointerPointer<BytePointer> name = new PointerPointer<>(1);
            BytePointer text =
                    cuGetErrorName(result, name) == 0 ? name.get(BytePointer.class, 0) : null;
            throw new A2aException(
                    "cuda driver call failed: "
                            + call
                            + " returned "
                            + (text == null || text.isNull() ? "" : text.getString() + " ")
                            + "(CUresult "
                            + result
                            + ")");
        }
    }
}
