package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cudart.cudaEventCreateWithFlags;
import static org.bytedeco.cuda.global.cudart.cudaEventDestroy;
import static org.bytedeco.cuda.global.cudart.cudaEventDisableTiming;
import static org.bytedeco.cuda.global.cudart.cudaEventRecord;
import static org.bytedeco.cuda.global.cudart.cudaStreamCreateWithFlags;
import static org.bytedeco.cuda.global.cudart.cudaStreamDestroy;
import static org.bytedeco.cuda.global.cudart.cudaStreamNonBlocking;
import static org.bytedeco.cuda.global.cudart.cudaStreamWaitEvent;

import moe.a2a.experts.ExpertWeights;
import moe.a2a.experts.SharedExpert;
import moe.a2a.kernels.DType;
import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.FloatPointer;
import org.jspecify.annotations.Nullable;

/**
 * A layer's shared expert on the device (DeepSeek's, added as it is, or Qwen2-MoE's, scaled per
 * token by {@code sigmoid(gate · x)}): its MLP runs on a stream of its own on the rank's tokens
 * while the main stream dispatches and combines, and its rows are added into the combined output
 * once both are done. Every rank holds it, so its tokens never travel. The stream and the memory it
 * runs in are a caller's {@link Lane}. Owned by the rank's thread.
 */
final class GpuSharedExpert implements AutoCloseable {
    private final GpuExperts mlp;
    private final CudaKernels kernels;
    private final int hidden;
    private final int ffn;
    private final @Nullable CudaMemory gate;

    GpuSharedExpert(SharedExpert shared, boolean tf32, CudaKernels kernels) {
        ExpertWeights weights = shared.mlp();
        this.mlp =
                new GpuExperts(
                        new ExpertWeights[] {weights},
                        weights.hidden(),
                        weights.ffn(),
                        tf32,
                        kernels);
        this.kernels = kernels;
        this.hidden = weights.hidden();
        this.ffn = weights.ffn();
        float[] g = shared.gate();
        CudaMemory onDevice = null;
        if (g != null) {
            onDevice = CudaMemory.device();
            try {
                onDevice.ensure((long) g.length * Float.BYTES);
                onDevice.upload(
                        new FloatPointer(g), (long) g.length * Float.BYTES, "shared expert gate");
            } catch (RuntimeException e) {
                // out of device memory, say: the MLP's weights go too, for the fallback's room
                onDevice.close();
                mlp.close();
                throw e;
            }
        }
        this.gate = onDevice;
    }

    /** The MLP's width: what a {@link Lane}'s memory is sized by. */
    int ffn() {
        return ffn;
    }

    /**
     * One caller's side stream, with the events that fork it from the main stream and join it back,
     * and the device memory of its steps: the MLP's rows, scratch and argument lists. A rank's
     * normal steps share one across all their layers' shared experts, so one layer's MLP is ordered
     * after the last one's on the same stream even when a step failed before joining it; a step
     * captured as a graph keeps their addresses, so it brings its own, which nothing else grows.
     * The stream and events are made by the first step, on the rank's device.
     */
    static final class Lane implements AutoCloseable {
        private final CUstream_st side = new CUstream_st();
        private final CUevent_st tokensReady = new CUevent_st();
        private final CUevent_st done = new CUevent_st();
        private boolean created;

        private final CudaMemory out = CudaMemory.device();

        /** An fp16 step's tokens widened to fp32 for the fp32 GEMMs. */
        private final CudaMemory widened = CudaMemory.device();

        private final GpuExperts.Scratch scratch = new GpuExperts.Scratch();

        /** The MLP's one slot's rows, the step's tokens: kept to allocate nothing a step. */
        private final int[] rows = new int[1];

        /** The side stream, made with its events the first time. */
        private CUstream_st side() {
            if (!created) {
                CudaCheck.check(
                        cudaStreamCreateWithFlags(side, cudaStreamNonBlocking),
                        "cudaStreamCreateWithFlags");
                created = true;
                CudaCheck.check(
                        cudaEventCreateWithFlags(tokensReady, cudaEventDisableTiming),
                        "cudaEventCreateWithFlags");
                CudaCheck.check(
                        cudaEventCreateWithFlags(done, cudaEventDisableTiming),
                        "cudaEventCreateWithFlags");
            }
            return side;
        }

        @Override
        public void close() {
            out.close();
            widened.close();
            scratch.close();
            if (created) {
                created = false;
                if (!tokensReady.isNull()) {
                    cudaEventDestroy(tokensReady);
                }
                if (!done.isNull()) {
                    cudaEventDestroy(done);
                }
                cudaStreamDestroy(side);
            }
        }
    }

    /**
     * Starts the MLP on {@code tokens} ({@code [T, H]} in {@code dtype} on the device, written on
     * {@code main} up to here) on the side stream: bf16 GEMMs for bf16 tokens, fp32 ones for the
     * others (fp16 tokens widened first).
     */
    void start(Lane lane, CudaMemory tokens, int numTokens, DType dtype, CUstream_st main) {
        lane.out.ensure(Math.max(1, (long) numTokens * hidden * Float.BYTES));
        CUstream_st side = lane.side();
        CudaCheck.check(cudaEventRecord(lane.tokensReady, main), "cudaEventRecord");
        CudaCheck.check(cudaStreamWaitEvent(side, lane.tokensReady, 0), "cudaStreamWaitEvent");
        lane.rows[0] = numTokens;
        CudaMemory x = tokens;
        if (dtype == DType.FP16) {
            lane.widened.ensure(Math.max(1, (long) numTokens * hidden * Float.BYTES));
            kernels.widenRows(
                    tokens.at(0), null, lane.widened.at(0), hidden, numTokens, dtype, side);
            x = lane.widened;
        }
        mlp.forward(x, GpuDispatcher.expertDType(dtype), lane.rows, lane.out, side, lane.scratch);
        CudaCheck.check(cudaEventRecord(lane.done, side), "cudaEventRecord");
    }

    /**
     * Enqueues on {@code main}, after the MLP: {@code combined} (fp32 {@code [T, H]}) += the shared
     * rows, gated by {@code tokens} (in {@code dtype}) where the layer has a gate.
     */
    void addTo(
            Lane lane,
            CudaMemory combined,
            CudaMemory tokens,
            int numTokens,
            DType dtype,
            CUstream_st main) {
        CudaCheck.check(cudaStreamWaitEvent(main, lane.done, 0), "cudaStreamWaitEvent");
        CudaMemory g = gate;
        kernels.addShared(
                lane.out.at(0),
                tokens.at(0),
                g == null ? null : g.at(0),
                combined.at(0),
                hidden,
                numTokens,
                dtype,
                main);
    }

    @Override
    public void close() {
        mlp.close();
        if (gate != null) {
            gate.close();
        }
    }
}
