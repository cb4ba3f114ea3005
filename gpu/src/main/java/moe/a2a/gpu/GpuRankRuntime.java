package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cudart.cudaEventCreate;
import static org.bytedeco.cuda.global.cudart.cudaEventDestroy;
import static org.bytedeco.cuda.global.cudart.cudaEventElapsedTime;
import static org.bytedeco.cuda.global.cudart.cudaEventRecord;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyAsync;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyDeviceToHost;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyHostToDevice;
import static org.bytedeco.cuda.global.cudart.cudaSetDevice;
import static org.bytedeco.cuda.global.cudart.cudaStreamCreateWithFlags;
import static org.bytedeco.cuda.global.cudart.cudaStreamDestroy;
import static org.bytedeco.cuda.global.cudart.cudaStreamNonBlocking;
import static org.bytedeco.cuda.global.cudart.cudaStreamSynchronize;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.ReentrantLock;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.CpuRankRuntime;
import moe.a2a.experts.ExpertWeights;
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
 * from CUDA events; low-latency steps run with fixed sizes, replayed as CUDA graphs ({@link
 * GpuLowLatencySteps}). Steps with an expert capacity run on the device too: the filter runs on the
 * host with the routing, and the pairs it drops are in no index list; so do layers with a shared
 * expert, its MLP on a stream of its own beside the exchange ({@link GpuSharedExpert}).
 *
 * <p>The experts' weights are held once on the device, in bf16 (or as an FP8 checkpoint stores
 * them, where the device has no room for bf16). Bound to a group that is not on NCCL (nor a sparse
 * group over NCCL), the rank runs its steps on the CPU {@link CpuRankRuntime} over that group,
 * which loads its fp32 copy of the weights on the first step, saying so in one line. A new
 * placement's experts are uploaded on a stream of their own while steps go on ({@link #stage}, off
 * the rank's thread), sharing the weights of the experts the rank keeps, and switched to between
 * steps ({@link #install}). Routing (gate, top-k) runs on the host in every case. Owned by the
 * rank's thread, except {@link #stage}.
 */
public final class GpuRankRuntime implements RankRuntime, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(GpuRankRuntime.class);

    private final ModelConfig model;
    private final Placement placement;

    /** Per layer, the placement its steps route by (shares may change; the experts do not). */
    private final Placement[] placements;

    private final int rank;
    private final int device;
    private final WeightSource weights;
    private final RankStep step;
    private final RankStep.Compute onDevice = this::compute;
    private final CudaKernels kernels;

    /** Per layer, the experts its steps run: replaced whole by {@link #install}. */
    private final AtomicReferenceArray<GpuExperts> experts;

    /** Per layer, the experts staged for a coming placement and not yet installed. */
    private final AtomicReferenceArray<Staged> staged;

    /**
     * Per layer, held by its staging (on the loader's thread) and its install (on the rank's): one
     * at a time. Steps do not take them, so they go on while a placement is staged, and an install
     * waits for no other layer's staging.
     */
    private final ReentrantLock[] staging;

    /** Set by {@link #close} with every {@link #staging} lock held. */
    private boolean closed;

    /** Where staged experts' weights are uploaded, beside the steps' streams. */
    private final CUstream_st uploads = new CUstream_st();

    /** The host path, loaded by the first step that takes it. */
    private @Nullable CpuRankRuntime host;

    private @Nullable Communicator comm;

    /** Per layer: its shared expert on the device, or null when it has none. */
    private final @Nullable GpuSharedExpert[] shared;

    private final CudaMemory pinned = CudaMemory.pinnedHost();
    private final CudaMemory tokens = CudaMemory.device();
    private final CudaMemory expertOut = CudaMemory.device();
    private final CudaMemory combined = CudaMemory.device();

    /** The normal steps' memory between the projections, one for every layer. */
    private final GpuExperts.Scratch scratch = new GpuExperts.Scratch();

    /** The normal steps' memory of the shared experts, one for every layer. */
    private final GpuSharedExpert.Lane sharedLane = new GpuSharedExpert.Lane();

    private final CUevent_st[] events = new CUevent_st[4];
    private @Nullable GpuDispatcher dispatcher;
    private @Nullable GpuLowLatencySteps lowLatency;
    private float[] out = new float[0];
    private ByteBuffer output = ByteBuffer.allocateDirect(0);

    /** A coming placement's experts on the device, and on the host path when it was loaded. */
    private record Staged(Placement placement, GpuExperts device, @Nullable LayerSlots host) {}

    /**
     * Loads {@code rank}'s experts on {@code device}, every layer: in bf16, or as the source stores
     * them in FP8 when {@code options} asks for it or the device has no room for bf16 (saying so in
     * one log line); fp16 and fp32 steps run TF32 GEMMs when {@code options} allow, else fp32 ones.
     *
     * @throws OutOfDeviceMemoryException when the device cannot hold them, having freed what it
     *     took
     */
    public GpuRankRuntime(
            ModelConfig model,
            WeightSource weights,
            Placement placement,
            int rank,
            int device,
            GpuRankOptions options) {
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
        this.device = device;
        this.weights = weights;
        this.step = new RankStep(weights, model, rank);
        selectDevice();
        this.kernels = CudaKernels.load(device);
        this.experts = new AtomicReferenceArray<>(model.layers());
        this.staged = new AtomicReferenceArray<>(model.layers());
        this.staging = new ReentrantLock[model.layers()];
        Arrays.setAll(staging, l -> new ReentrantLock());
        this.shared = new GpuSharedExpert[model.layers()];
        boolean tf32 = options.tf32();
        boolean fp8 = options.fp8Experts() && storedInFp8();
        if (options.fp8Experts() && !fp8) {
            LOG.warn(
                    "rank {}: FP8 experts asked for, but {} does not store them in FP8: they are"
                            + " held in bf16",
                    rank,
                    weights.description());
        }
        try {
            // made before the experts fill the device, so a step never has to find room for it
            scratch.handle();
            try {
                loadExperts(tf32, fp8);
            } catch (OutOfDeviceMemoryException e) {
                if (fp8 || !storedInFp8()) {
                    throw e;
                }
                freeExperts();
                LOG.warn(
                        "rank {}: GPU {} has no room for its experts in bf16 ({}): they are held in"
                                + " FP8 as the checkpoint stores them, made bf16 for each GEMM",
                        rank,
                        device,
                        e.getMessage());
                loadExperts(tf32, true);
                fp8 = true;
            }
            CudaCheck.check(
                    cudaStreamCreateWithFlags(uploads, cudaStreamNonBlocking),
                    "cudaStreamCreateWithFlags");
            for (int i = 0; i < events.length; i++) {
                events[i] = new CUevent_st();
                CudaCheck.check(cudaEventCreate(events[i]), "cudaEventCreate");
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
        LOG.info(
                "rank {} on GPU {}: {} local experts a layer over {} layers, {} MiB each, held once"
                        + " on the device ({})",
                rank,
                device,
                placement.localExperts(rank),
                model.layers(),
                String.format(
                        Locale.ROOT, "%.1f", weightMemory().deviceBytesPerExpert() / 1048576.0),
                fp8 ? "FP8 as stored" : "bf16");
    }

    /** Every layer's experts, bf16 or FP8 as {@code fp8} says, and shared experts in bf16. */
    private void loadExperts(boolean tf32, boolean fp8) {
        for (int layer = 0; layer < model.layers(); layer++) {
            experts.set(
                    layer,
                    fp8
                            ? GpuExperts.heldInFp8(weights, layer, placement, rank, tf32, kernels)
                            : new GpuExperts(weights, layer, placement, rank, tf32, kernels));
            SharedExpert s = weights.sharedExpert(layer);
            shared[layer] = s == null ? null : new GpuSharedExpert(s, tf32, kernels);
        }
    }

    /** Whether the source stores this rank's experts in FP8, which it can hold instead of bf16. */
    private boolean storedInFp8() {
        int[] ids = placement.expertsOf(rank);
        return model.layers() > 0 && ids.length > 0 && weights.fp8Expert(0, ids[0]) != null;
    }

    /** Frees the experts loaded so far, for another try. */
    private void freeExperts() {
        for (int layer = 0; layer < model.layers(); layer++) {
            GpuExperts e = experts.getAndSet(layer, null);
            if (e != null) {
                e.close();
            }
            if (shared[layer] != null) {
                shared[layer].close();
                shared[layer] = null;
            }
        }
    }

    @Override
    public Placement placement(int layer) {
        return placements[layer];
    }

    /**
     * Stages {@code next} for {@code layer}: the experts it brings to this rank uploaded in bf16 on
     * a stream of their own (steps go on), the ones it keeps shared, and the host path's fp32 slots
     * when that path is loaded. A staging not installed is dropped by the next one. Any thread; one
     * staging per layer at a time.
     *
     * @throws A2aException when {@code next} gives this rank another number of slots: the device
     *     dispatchers are sized by it
     */
    @Override
    public LayerSlots stage(int layer, Placement next) {
        int slots = placement.localExperts(rank);
        if (next.localExperts(rank) != slots) {
            throw new A2aException(
                    "rank "
                            + rank
                            + ", layer "
                            + layer
                            + ": the placement gives this GPU rank "
                            + next.localExperts(rank)
                            + " slots (expected: "
                            + slots
                            + ", as it started with)");
        }
        staging[layer].lock();
        try {
            if (closed) {
                throw new A2aException("rank " + rank + ", layer " + layer + ": runtime closed");
            }
            return stageLocked(layer, next);
        } finally {
            staging[layer].unlock();
        }
    }

    /** {@link #stage}, no install nor other staging under way. */
    private LayerSlots stageLocked(int layer, Placement next) {
        selectDevice();
        Staged dropped = staged.getAndSet(layer, null);
        GpuExperts now = experts.get(layer);
        if (dropped != null) {
            // its frees synchronize the device, which would invalidate a capture under way on the
            // rank's thread: they wait for the device's turn
            CaptureTurns.free(true, () -> dropped.device().retire(now));
        }
        GpuExperts onDevice = now.restaged(next.expertsOf(rank), weights, layer, uploads);
        CpuRankRuntime h = host;
        LayerSlots onHost = h == null ? null : h.stage(layer, next);
        staged.set(layer, new Staged(next, onDevice, onHost));
        return new LayerSlots(
                layer,
                next,
                onHost == null ? new ExpertWeights[0] : onHost.weights(),
                onDevice.loadedBytes() + (onHost == null ? 0 : onHost.loadedBytes()));
    }

    @Override
    public void recordRouting() {
        step.recordRouting();
    }

    /**
     * The projections on the device (bf16, or FP8 codes and scales); on the host, the fp32 copy of
     * the host path once a step loaded it.
     */
    @Override
    public WeightMemory weightMemory() {
        CpuRankRuntime h = host;
        GpuExperts first = model.layers() == 0 ? null : experts.get(0);
        return new WeightMemory(
                first != null
                        ? first.bytesPerExpert()
                        : 3L * model.hidden() * model.ffn() * Short.BYTES,
                h == null ? 0 : h.weightMemory().hostBytesPerExpert(),
                WeightMemory.localExperts(this, rank, model.layers()));
    }

    /**
     * Switches {@code slots}' layer to its staged experts (staging them now if they were not),
     * frees the weights of the experts it left, and forgets the layer's captured graphs. Between
     * steps.
     */
    @Override
    public void install(LayerSlots slots) {
        // no staging on the loader's thread under way, which would retire what this installs
        staging[slots.layer()].lock();
        try {
            installLocked(slots);
        } finally {
            staging[slots.layer()].unlock();
        }
    }

    private void installLocked(LayerSlots slots) {
        selectDevice();
        int layer = slots.layer();
        Staged s = staged.get(layer);
        if (s == null || s.placement() != slots.placement()) {
            stage(layer, slots.placement());
            s = staged.get(layer);
        }
        staged.set(layer, null);
        GpuExperts before = experts.getAndSet(layer, s.device());
        if (lowLatency != null) {
            // its graphs hold the old experts' weight addresses and slot order
            lowLatency.forget(layer, before);
        }
        scratch.forget(before);
        before.retire(s.device());
        placements[layer] = s.placement();
        CpuRankRuntime h = host;
        if (h != null) {
            h.install(s.host() != null ? s.host() : h.stage(layer, s.placement()));
        }
    }

    /**
     * The host path, for a group not on NCCL: loaded the first time, with every layer's current
     * placement.
     */
    private CpuRankRuntime host(String why) {
        CpuRankRuntime h = host;
        if (h != null) {
            return h;
        }
        long start = System.nanoTime();
        h = new CpuRankRuntime(model, weights, placement, rank);
        for (int layer = 0; layer < model.layers(); layer++) {
            if (placements[layer] != placement) {
                h.install(h.stage(layer, placements[layer]));
            }
        }
        Communicator c = comm;
        if (c != null) {
            h.rebind(c);
        }
        host = h;
        LOG.info(
                "rank {}: {} take the host path: loaded its fp32 copy of the experts, {} MiB each,"
                        + " in {} ms",
                rank,
                why,
                String.format(
                        Locale.ROOT, "%.1f", h.weightMemory().hostBytesPerExpert() / 1048576.0),
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
        return h;
    }

    @Override
    public void rebind(Communicator comm) {
        rebind(comm, true);
    }

    /**
     * As {@link #rebind(Communicator)}; unless {@code everyMemberOnDevice} ({@link DevicePaths}),
     * the group's steps take the host path, as a member of the group on it does.
     */
    public void rebind(Communicator comm, boolean everyMemberOnDevice) {
        selectDevice();
        this.comm = comm;
        if (host != null) {
            host.rebind(comm);
        }
        if (dispatcher != null) {
            dispatcher.close();
            dispatcher = null;
        }
        if (lowLatency != null) {
            // its graphs captured the old communicator's exchanges
            lowLatency.close();
            lowLatency = null;
        }
        DeviceGroup group = everyMemberOnDevice ? DeviceGroup.of(comm) : null;
        if (group != null) {
            dispatcher =
                    new GpuDispatcher(
                            group,
                            placement,
                            model.hidden(),
                            model.topK(),
                            model.dispatchDType(),
                            kernels);
            lowLatency =
                    new GpuLowLatencySteps(
                            group, model, kernels, experts::get, layer -> shared[layer], true);
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
        selectDevice();
        GpuLowLatencySteps fixed = lowLatency;
        if (fixed == null) {
            return host(comm != null && DeviceGroup.of(comm) != null
                            ? "steps of an NCCL group with a member on the host path"
                            : "steps of a group not on NCCL")
                    .step(layer, dtype, input, numTokens, routing, capacity, lowLatencyTokens);
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
            sharedExpert.start(sharedLane, tokens, numTokens, dtype, stream);
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
        experts.get(layer)
                .forward(
                        grouped,
                        GpuDispatcher.expertDType(dtype),
                        rowsPerSlot,
                        expertOut,
                        stream,
                        scratch);
        CudaCheck.check(cudaEventRecord(events[2], stream), "cudaEventRecord");
        gpu.combine(expertOut, combined);
        if (sharedExpert != null) {
            sharedExpert.addTo(sharedLane, combined, tokens, numTokens, dtype, stream);
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

    /**
     * Makes the rank's device current on the calling thread: the thread that made this runtime may
     * not be the one calling it (an executor replaces a thread that died), and every allocation and
     * launch goes to the current device.
     */
    private void selectDevice() {
        CudaCheck.check(cudaSetDevice(device), "cudaSetDevice(" + device + ")");
    }

    private static long elapsedNs(CUevent_st from, CUevent_st to) {
        float[] ms = new float[1];
        CudaCheck.check(cudaEventElapsedTime(ms, from, to), "cudaEventElapsedTime");
        return (long) (ms[0] * 1e6);
    }

    /**
     * Frees the rank's device memory once no staging is under way: one on the loader's thread
     * finishes first, and none starts after.
     */
    @Override
    public void close() {
        for (ReentrantLock layer : staging) {
            layer.lock();
        }
        try {
            if (!closed) {
                closed = true;
                free();
            }
        } finally {
            for (ReentrantLock layer : staging) {
                layer.unlock();
            }
        }
    }

    private void free() {
        if (host != null) {
            host.close();
        }
        if (dispatcher != null) {
            dispatcher.close();
        }
        if (lowLatency != null) {
            lowLatency.close();
        }
        for (int layer = 0; layer < experts.length(); layer++) {
            GpuExperts e = experts.get(layer);
            Staged s = staged.getAndSet(layer, null);
            if (s != null && e != null) {
                s.device().retire(e);
            }
            if (e != null) {
                e.close();
            }
        }
        for (GpuSharedExpert s : shared) {
            if (s != null) {
                s.close();
            }
        }
        for (CUevent_st e : events) {
            if (e != null) {
                cudaEventDestroy(e);
            }
        }
        if (!uploads.isNull()) {
            // a constructor that failed before making it leaves the null handle
            cudaStreamDestroy(uploads);
        }
        pinned.close();
        tokens.close();
        expertOut.close();
        combined.close();
        scratch.close();
        sharedLane.close();
        kernels.close();
    }
}
