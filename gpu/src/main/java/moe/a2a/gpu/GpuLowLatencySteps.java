package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cudart.cudaEventCreate;
import static org.bytedeco.cuda.global.cudart.cudaEventDestroy;
import static org.bytedeco.cuda.global.cudart.cudaEventElapsedTime;
import static org.bytedeco.cuda.global.cudart.cudaEventRecord;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HashMap;
import java.util.Map;
import java.util.function.IntFunction;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankStep;
import moe.a2a.kernels.DType;
import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.jspecify.annotations.Nullable;

/**
 * A GPU rank's low-latency steps: dispatch, experts and combine on the device with every size fixed
 * by the step's bound ({@link GpuLowLatencyDispatcher}, one per bound). The first step of a layer
 * and bound runs as it is enqueued (it sizes every buffer and opens NCCL's connections); the second
 * is captured as a CUDA graph, and every later one only stages its tokens and replays that graph.
 * Every rank sees the same steps, so all capture the same one, as NCCL requires. Owned by the
 * rank's thread.
 */
final class GpuLowLatencySteps implements AutoCloseable {
    /** The fixed sizes of a step: its bound and its tokens' dtype. */
    private record Shape(int bound, DType dtype) {}

    /** Whose steps a graph replays: a layer's, of one shape. */
    private record Graph(int layer, Shape shape) {}

    /** A layer and shape's steps so far, and its graph once captured. */
    private static final class Replay {
        int runs;
        @Nullable CudaGraph graph;
    }

    /**
     * A bound's device memory: graphs keep the addresses they were captured with, so nothing here
     * is shared with other bounds or the normal path, and nothing grows once the first step ran.
     */
    private static final class Fixed implements AutoCloseable {
        final GpuLowLatencyDispatcher dispatcher;
        final CudaMemory expertOut = CudaMemory.device();
        final GpuExperts.Scratch scratch = new GpuExperts.Scratch();

        /**
         * Per shared-expert width, the lane of the layers with one that wide: a layer with a wider
         * one would grow a lane whose addresses other layers' graphs hold.
         */
        final Map<Integer, GpuSharedExpert.Lane> sharedLanes = new HashMap<>();

        Fixed(GpuLowLatencyDispatcher dispatcher) {
            this.dispatcher = dispatcher;
        }

        GpuSharedExpert.Lane lane(GpuSharedExpert shared) {
            return sharedLanes.computeIfAbsent(shared.ffn(), w -> new GpuSharedExpert.Lane());
        }

        @Override
        public void close() {
            dispatcher.close();
            expertOut.close();
            scratch.close();
            sharedLanes.values().forEach(GpuSharedExpert.Lane::close);
        }
    }

    private final DeviceGroup group;
    private final ModelConfig model;
    private final CudaKernels kernels;
    private final IntFunction<GpuExperts> experts;

    /** Per layer, its shared expert, or null. */
    private final IntFunction<@Nullable GpuSharedExpert> shared;

    private final boolean capture;
    private final Map<Shape, Fixed> bounds = new HashMap<>();
    private final Map<Graph, Replay> replays = new HashMap<>();
    private @Nullable CUevent_st start;
    private @Nullable CUevent_st end;
    private ByteBuffer output = ByteBuffer.allocateDirect(0);
    private long step;

    /** What the group runs before NCCL aborts or frees it: {@link #dropGraphs}. */
    private final Runnable drop = this::dropGraphs;

    /** Whether the group holds {@link #drop}: a graph was captured on it. */
    private boolean holding;

    /**
     * @param capture whether steps after the first are captured and replayed as CUDA graphs (else
     *     each is enqueued anew, the same work)
     */
    GpuLowLatencySteps(
            DeviceGroup group,
            ModelConfig model,
            CudaKernels kernels,
            IntFunction<GpuExperts> experts,
            IntFunction<@Nullable GpuSharedExpert> shared,
            boolean capture) {
        this.group = group;
        this.model = model;
        this.kernels = kernels;
        this.experts = experts;
        this.shared = shared;
        this.capture = capture;
    }

    /**
     * One step of {@code layer} in low-latency mode with room for {@code bound} tokens a rank,
     * routed by {@code placement}; the other arguments as {@link RankStep.Compute}'s. The stages
     * run as one graph, so their time is reported as dispatch.
     */
    RankStep.Computed run(
            int layer,
            DType dtype,
            ByteBuffer input,
            int numTokens,
            int[] ids,
            float[] weights,
            int bound,
            Placement placement) {
        Shape shape = new Shape(bound, dtype);
        Fixed fixed =
                bounds.computeIfAbsent(
                        shape,
                        b ->
                                new Fixed(
                                        new GpuLowLatencyDispatcher(
                                                group,
                                                placement,
                                                model.hidden(),
                                                model.topK(),
                                                bound,
                                                dtype,
                                                model.dispatchDType(),
                                                kernels)));
        GpuLowLatencyDispatcher dispatcher = fixed.dispatcher;
        CUevent_st from = start;
        CUevent_st to = end;
        if (from == null || to == null) {
            // on the thread that runs the steps, whose current device is the rank's
            from = event();
            to = event();
            start = from;
            end = to;
        }
        long s = step++;
        dispatcher.use(placement);
        dispatcher.stage(input, numTokens, ids, weights);
        CUstream_st stream = group.stream();
        CudaCheck.check(cudaEventRecord(from, stream), "cudaEventRecord");
        Replay replay = replays.computeIfAbsent(new Graph(layer, shape), k -> new Replay());
        if (replay.graph == null && capture && replay.runs > 0) {
            if (!holding) {
                group.holdGraphs(drop);
                holding = true;
            }
            group.capturing(true);
            try {
                replay.graph = CudaGraph.capture(stream, () -> enqueue(layer, dtype, fixed, s));
            } finally {
                group.capturing(false);
            }
        }
        CudaGraph graph = replay.graph;
        if (graph != null) {
            graph.launch(stream);
        } else {
            enqueue(layer, dtype, fixed, s);
        }
        replay.runs++;
        CudaCheck.check(cudaEventRecord(to, stream), "cudaEventRecord");
        group.awaitEnqueued(s, ExchangePhase.COMBINE, "low-latency step on the device");
        return computed(dtype, dispatcher, numTokens, from, to);
    }

    /**
     * Forgets {@code layer}'s graphs, which hold the addresses of its experts {@code retired}, and
     * their argument lists: a new placement moved experts in or out. Its next step is enqueued call
     * by call again, and the one after captured anew.
     */
    void forget(int layer, GpuExperts retired) {
        replays.entrySet()
                .removeIf(
                        e -> {
                            if (e.getKey().layer() != layer) {
                                return false;
                            }
                            CudaGraph graph = e.getValue().graph;
                            if (graph != null) {
                                graph.close();
                            }
                            return true;
                        });
        for (Fixed f : bounds.values()) {
            f.scratch.forget(retired);
        }
    }

    /**
     * Whether {@code layer}'s steps of {@code bound} in {@code dtype} replay a captured graph now.
     */
    boolean replays(int layer, int bound, DType dtype) {
        Replay replay = replays.get(new Graph(layer, new Shape(bound, dtype)));
        return replay != null && replay.graph != null;
    }

    /**
     * One step on the stream. A layer's shared expert runs on every staged row (the bound: a graph
     * has fixed shapes) on its own stream from the tokens' arrival, and is added before the copy
     * back.
     */
    private void enqueue(int layer, DType dtype, Fixed fixed, long s) {
        fixed.dispatcher.enqueueStaged();
        GpuSharedExpert sharedExpert = shared.apply(layer);
        int bound = fixed.dispatcher.bound();
        CudaMemory tokens = fixed.dispatcher.tokens();
        GpuSharedExpert.Lane lane = sharedExpert == null ? null : fixed.lane(sharedExpert);
        if (sharedExpert != null) {
            // from here on its stream overlaps the pack, the exchange, the experts and combine
            sharedExpert.start(lane, tokens, bound, dtype, group.stream());
        }
        CudaMemory grouped = fixed.dispatcher.enqueueDispatch(s);
        int[] rowsPerSlot = fixed.dispatcher.rowsPerSlot();
        long groupedRows = 0;
        for (int n : rowsPerSlot) {
            groupedRows += n;
        }
        fixed.expertOut.ensure(Math.max(1, groupedRows * model.hidden() * Float.BYTES));
        experts.apply(layer)
                .forward(
                        grouped,
                        GpuDispatcher.expertDType(dtype),
                        rowsPerSlot,
                        fixed.expertOut,
                        group.stream(),
                        fixed.scratch);
        fixed.dispatcher.enqueueCombine(
                s,
                fixed.expertOut,
                sharedExpert == null
                        ? null
                        : out ->
                                sharedExpert.addTo(
                                        lane, out, tokens, bound, dtype, group.stream()));
    }

    private static CUevent_st event() {
        CUevent_st event = new CUevent_st();
        CudaCheck.check(cudaEventCreate(event), "cudaEventCreate");
        return event;
    }

    private RankStep.Computed computed(
            DType dtype,
            GpuLowLatencyDispatcher dispatcher,
            int numTokens,
            CUevent_st start,
            CUevent_st end) {
        int hidden = model.hidden();
        int outBytes = numTokens * hidden * dtype.sizeBytes();
        if (output.capacity() < outBytes) {
            output = ByteBuffer.allocateDirect(outBytes).order(ByteOrder.LITTLE_ENDIAN);
        }
        float[] out = new float[numTokens * hidden];
        dispatcher.output().asFloatBuffer().get(0, out, 0, out.length);
        dtype.encode(out, 0, out.length, output, 0);
        int n = group.size();
        long[] recvRowsFrom = new long[n];
        int received = 0;
        for (int r = 0; r < n; r++) {
            recvRowsFrom[r] = dispatcher.receivedFrom(r);
            received += (int) recvRowsFrom[r];
        }
        float[] ms = new float[1];
        CudaCheck.check(cudaEventElapsedTime(ms, start, end), "cudaEventElapsedTime");
        int rowBytes = hidden * dtype.sizeBytes();
        return new RankStep.Computed(
                output,
                dispatcher.layout().tokensPerRankCopy(),
                dispatcher.layout().pairsPerRankCopy(),
                dispatcher.layout().tokensPerRankCopy(),
                dispatcher.layout().tokensPerExpertCopy(),
                recvRowsFrom,
                received,
                rowBytes,
                rowBytes,
                (long) (ms[0] * 1e6),
                0,
                0);
    }

    /**
     * Destroys every captured graph (a later step captures anew): the graphs hold the NCCL
     * communicator's calls, and NCCL aborts or frees it only once none is left.
     */
    void dropGraphs() {
        for (Replay r : replays.values()) {
            CudaGraph graph = r.graph;
            if (graph != null) {
                r.graph = null;
                graph.close();
            }
        }
    }

    @Override
    public void close() {
        dropGraphs();
        if (holding) {
            group.releaseGraphs(drop);
        }
        for (Fixed f : bounds.values()) {
            f.close();
        }
        if (start != null) {
            cudaEventDestroy(start);
        }
        if (end != null) {
            cudaEventDestroy(end);
        }
    }
}
