package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cudart.cudaEventCreate;
import static org.bytedeco.cuda.global.cudart.cudaEventDestroy;
import static org.bytedeco.cuda.global.cudart.cudaEventElapsedTime;
import static org.bytedeco.cuda.global.cudart.cudaEventRecord;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyAsync;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyDeviceToHost;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyHostToDevice;
import static org.bytedeco.cuda.global.cudart.cudaSetDevice;
import static org.bytedeco.cuda.global.cudart.cudaStreamSynchronize;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Locale;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.nccl.NcclCommunicator;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.CpuRankRuntime;
import moe.a2a.experts.LayerSlots;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankRuntime;
import moe.a2a.experts.RankStep;
import moe.a2a.experts.RankStepResult;
import moe.a2a.experts.RoutingInput;
import moe.a2a.experts.SharedExpert;
import moe.a2a.experts.WeightMemory;
import moe.a2a.experts.WeightSource;
import moe.a2a.kernels.DType;
import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One rank on a GPU: {@link RankStep}'s skeleton, as on the CPU, with a device compute: steps run
 * with their rows in device memory ({@link GpuDispatcher}, {@link GpuExperts}), in the step's dtype
 * as on the CPU path (bf16 GEMMs for bf16 steps, fp32 GEMMs on the widened bf16 weights for fp16
 * and fp32 ones), tokens and outputs crossing the host boundary through pinned memory, stage times
 * from CUDA events; bf16 low-latency steps run with fixed sizes, replayed as CUDA graphs ({@link
 * GpuLowLatencySteps}). Steps with an expert capacity run on the device too: the filter runs on the
 * host with the routing, and the pairs it drops are in no index list; so do layers with a shared
 * expert, its MLP on a stream of its own beside the exchange ({@link GpuSharedExpert}). The
 * low-latency steps the fixed-size path does not take (fp16 and fp32, FP8 dispatch, a shared
 * expert, an odd hidden size) run on the CPU {@link CpuRankRuntime} over the same NCCL communicator
 * (host-staged). Routing (gate, top-k) runs on the host in every case. Owned by the rank's thread.
 */
public final class GpuRankRuntime implements RankRuntime, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(GpuRankRuntime.class);

    private final ModelConfig model;
    private final Placement placement;

    /** Per layer, the placement its steps route by (shares may change; the experts do not). */
    private final Placement[] placements;

    private final int rank;
    private final CpuRankRuntime cpu;
    private final RankStep step;
    private final RankStep.Compute onDevice = this::compute;
    private final CudaKernels kernels;
    private final GpuExperts[] experts;

    /** Per layer: its shared expert on the device, or null when it has none. */
    private final @Nullable GpuSharedExpert[] shared;

    private final CudaMemory pinned = CudaMemory.pinnedHost();
    private final CudaMemory tokens = CudaMemory.device();
    private final CudaMemory expertOut = CudaMemory.device();
    private final CudaMemory combined = CudaMemory.device();
    private final CUevent_st[] events = new CUevent_st[4];
    private @Nullable GpuDispatcher dispatcher;
    private @Nullable GpuLowLatencySteps lowLatency;
    private float[] out = new float[0];
    private ByteBuffer output = ByteBuffer.allocateDirect(0);

    /**
     * Loads {@code rank}'s experts on {@code device} (bf16, every layer) and on the host (for the
     * low-latency steps that run there); fp16 and fp32 steps run TF32 GEMMs when {@code tf32}, else
     * fp32 ones.
     */
    public GpuRankRuntime(
            ModelConfig model,
            WeightSource weights,
            Placement placement,
            int rank,
            int device,
            boolean tf32) {
        if (model.microBatches() != 1) {
            throw new IllegalArgumentException(
                    "micro-batches: "
                            + model.microBatches()
                            + " (expected: 1 on GPU ranks; the overlapped step runs on the CPU"
                            + " transports)");
        }
        this.model = model;
        this.placement = placement;
        this.placements = new Placement[model.layers()];
        Arrays.fill(placements, placement);
        this.rank = rank;
        this.cpu = new CpuRankRuntime(model, weights, placement, rank);
        this.step = new RankStep(weights, model, rank);
        CudaCheck.check(cudaSetDevice(device), "cudaSetDevice(" + device + ")");
        this.kernels = CudaKernels.load(device);
        this.experts = new GpuExperts[model.layers()];
        this.shared = new GpuSharedExpert[model.layers()];
        for (int layer = 0; layer < experts.length; layer++) {
            experts[layer] = new GpuExperts(weights, layer, placement, rank, tf32, kernels);
            SharedExpert s = weights.sharedExpert(layer);
            shared[layer] = s == null ? null : new GpuSharedExpert(s, tf32, kernels);
        }
        for (int i = 0; i < events.length; i++) {
            events[i] = new CUevent_st();
            CudaCheck.check(cudaEventCreate(events[i]), "cudaEventCreate");
        }
        WeightMemory memory = weightMemory();
        LOG.info(
                "rank {} on GPU {}: {} local experts a layer over {} layers, {} MiB each on the"
                        + " device (bf16) and {} MiB each on the host (fp32, for the low-latency"
                        + " steps that take the host path)",
                rank,
                device,
                placement.localExperts(rank),
                model.layers(),
                String.format(Locale.ROOT, "%.1f", memory.deviceBytesPerExpert() / 1048576.0),
                String.format(Locale.ROOT, "%.1f", memory.hostBytesPerExpert() / 1048576.0));
    }

    @Override
    public Placement placement(int layer) {
        return placements[layer];
    }

    /**
     * Stages a placement that keeps this rank's experts in their slots and changes only the shares
     * (as serving without a lost rank, and coming back, do).
     *
     * @throws A2aException when {@code next} moves an expert into or out of this rank: the device
     *     weights are loaded once, at start
     */
    @Override
    public LayerSlots stage(int layer, Placement next) {
        Placement now = placements[layer];
        int slots = now.localExperts(rank);
        boolean same = next.localExperts(rank) == slots;
        for (int s = 0; same && s < slots; s++) {
            same = next.expertAt(rank, s) == now.expertAt(rank, s);
        }
        if (!same) {
            throw new A2aException(
                    "rank "
                            + rank
                            + ", layer "
                            + layer
                            + ": the placement moves experts into or out of this GPU rank, whose"
                            + " device weights are loaded once; only shares may change here");
        }
        return cpu.stage(layer, next);
    }

    @Override
    public void recordRouting() {
        step.recordRouting();
    }

    /** bf16 projections on the device, and the host path's fp32 copy beside them. */
    @Override
    public WeightMemory weightMemory() {
        WeightMemory host = cpu.weightMemory();
        return new WeightMemory(
                3L * model.hidden() * model.ffn() * Short.BYTES,
                host.hostBytesPerExpert(),
                host.localExperts());
    }

    @Override
    public void install(LayerSlots staged) {
        cpu.install(staged);
        placements[staged.layer()] = staged.placement();
    }

    @Override
    public void rebind(Communicator comm) {
        cpu.rebind(comm);
        if (dispatcher != null) {
            dispatcher.close();
            dispatcher = null;
        }
        if (lowLatency != null) {
            // its graphs captured the old communicator's exchanges
            lowLatency.close();
            lowLatency = null;
        }
        if (comm instanceof NcclCommunicator nccl) {
            dispatcher =
                    new GpuDispatcher(
                            nccl,
                            placement,
                            model.hidden(),
                            model.topK(),
                            model.dispatchDType(),
                            kernels);
            lowLatency = new GpuLowLatencySteps(nccl, model, kernels, experts, true);
        }
    }

    @Override
    public RankStepResult step(
            int layer,
            DType dtype,
            ByteBuffer input,
            int numTokens,
            RoutingInput routing,
            int capacity,
            int lowLatencyTokens) {
        GpuDispatcher gpu = dispatcher;
        GpuLowLatencySteps fixed = lowLatency;
        if (gpu == null
                || fixed == null
                || lowLatencyTokens > 0
                        && (dtype != DType.BF16
                                || model.hidden() % 2 != 0
                                || model.dispatchDType() == DispatchDType.FP8
                                || shared[layer] != null)) {
            return cpu.step(layer, dtype, input, numTokens, routing, capacity, lowLatencyTokens);
        }
        if (lowLatencyTokens > 0) {
            return step.run(
                    layer,
                    dtype,
                    input,
                    numTokens,
                    routing,
                    capacity,
                    (l, d, in, n, ids, w) ->
                            fixed.run(l, d, in, n, ids, w, lowLatencyTokens, placements[l]));
        }
        return step.run(layer, dtype, input, numTokens, routing, capacity, onDevice);
    }

    /**
     * Dispatch, experts and combine with the rows in device memory; stage times from CUDA events on
     * the dispatcher's stream.
     */
    private RankStep.Computed compute(
            int layer, DType dtype, ByteBuffer input, int numTokens, int[] ids, float[] weights) {
        GpuDispatcher gpu = dispatcher;
        final int hidden = model.hidden();
        final long inBytes = (long) numTokens * hidden * dtype.sizeBytes();
        CUstream_st stream = gpu.stream();
        pinned.ensure(Math.max(inBytes, (long) numTokens * hidden * Float.BYTES));
        pinned.hostView().put(0, input, 0, (int) inBytes);
        tokens.ensure(Math.max(1, inBytes));
        CudaCheck.check(cudaEventRecord(events[0], stream), "cudaEventRecord");
        if (inBytes > 0) {
            CudaCheck.check(
                    cudaMemcpyAsync(
                            tokens.at(0), pinned.at(0), inBytes, cudaMemcpyHostToDevice, stream),
                    "cudaMemcpyAsync(tokens)");
        }
        GpuSharedExpert sharedExpert = shared[layer];
        if (sharedExpert != null) {
            sharedExpert.start(tokens, numTokens, dtype, stream);
        }
        gpu.use(placements[layer]);
        CudaMemory grouped = gpu.dispatch(tokens, numTokens, dtype, ids, weights);
        CudaCheck.check(cudaEventRecord(events[1], stream), "cudaEventRecord");
        int[] rowsPerSlot = gpu.rowsPerSlot();
        long groupedRows = 0;
        for (int n : rowsPerSlot) {
            groupedRows += n;
        }
        expertOut.ensure(Math.max(1, groupedRows * hidden * Float.BYTES));
        experts[layer].forward(
                grouped, GpuDispatcher.expertDType(dtype), rowsPerSlot, expertOut, stream);
        CudaCheck.check(cudaEventRecord(events[2], stream), "cudaEventRecord");
        gpu.combine(expertOut, combined);
        if (sharedExpert != null) {
            sharedExpert.addTo(combined, tokens, numTokens, dtype, stream);
        }
        long outBytes = (long) numTokens * hidden * Float.BYTES;
        if (outBytes > 0) {
            CudaCheck.check(
                    cudaMemcpyAsync(
                            pinned.at(0), combined.at(0), outBytes, cudaMemcpyDeviceToHost, stream),
                    "cudaMemcpyAsync(output)");
        }
        CudaCheck.check(cudaEventRecord(events[3], stream), "cudaEventRecord");
        CudaCheck.check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        if (out.length < numTokens * hidden) {
            out = new float[numTokens * hidden];
        }
        pinned.hostView().asFloatBuffer().get(0, out, 0, numTokens * hidden);
        if (output.capacity() < inBytes) {
            output = ByteBuffer.allocateDirect((int) inBytes).order(ByteOrder.LITTLE_ENDIAN);
        }
        dtype.encode(out, 0, numTokens * hidden, output, 0);

        long[] recvRowsFrom = new long[placement.worldSize()];
        for (int r = 0; r < recvRowsFrom.length; r++) {
            recvRowsFrom[r] = gpu.receivedFrom(r);
        }
        // dispatch sends each row with its routes; combine returns the rows only
        return new RankStep.Computed(
                output,
                gpu.layout().tokensPerRankCopy(),
                gpu.layout().pairsPerRankCopy(),
                gpu.layout().tokensPerRankCopy(),
                gpu.layout().tokensPerExpertCopy(),
                recvRowsFrom,
                gpu.numReceived(),
                gpu.sentRowBytes() + gpu.routeRowBytes(),
                gpu.combineRowBytes(),
                elapsedNs(events[0], events[1]),
                elapsedNs(events[1], events[2]),
                elapsedNs(events[2], events[3]));
    }

    private static long elapsedNs(CUevent_st from, CUevent_st to) {
        float[] ms = new float[1];
        CudaCheck.check(cudaEventElapsedTime(ms, from, to), "cudaEventElapsedTime");
        return (long) (ms[0] * 1e6);
    }

    @Override
    public void close() {
        cpu.close();
        if (dispatcher != null) {
            dispatcher.close();
        }
        if (lowLatency != null) {
            lowLatency.close();
        }
        for (GpuExperts e : experts) {
            e.close();
        }
        for (GpuSharedExpert s : shared) {
            if (s != null) {
                s.close();
            }
        }
        for (CUevent_st e : events) {
            cudaEventDestroy(e);
        }
        pinned.close();
        tokens.close();
        expertOut.close();
        combined.close();
        kernels.close();
    }
}
