package moe.a2a.experts;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.dispatch.DispatchPath;
import moe.a2a.dispatch.DispatchResult;
import moe.a2a.dispatch.Dispatcher;
import moe.a2a.dispatch.ExpertSums;
import moe.a2a.dispatch.HierarchicalDispatcher;
import moe.a2a.dispatch.HostTopology;
import moe.a2a.dispatch.LowLatencyDispatcher;
import moe.a2a.dispatch.Placement;
import moe.a2a.kernels.DType;
import org.jspecify.annotations.Nullable;

/**
 * The runtime of one rank on the host: {@link RankStep}'s skeleton with dispatch by the layer's
 * placement, the local experts on what arrived, combine back, and the output encoded in the step's
 * dtype. A layer's shared expert runs on the rank's own tokens on a thread of its own, beside the
 * dispatch, the routed experts and the combine; its output is added before encoding. Every rank of
 * the group must run every step, with zero tokens if it has none. The exchanges run flat on one
 * group ({@link Dispatcher}) or across hosts on a rail and a host group ({@link
 * HierarchicalDispatcher}). Owned by the rank thread, except {@link #stage}.
 */
public final class CpuRankRuntime implements RankRuntime, AutoCloseable {
    private final ModelConfig model;
    private final int rank;
    private final Placement first;
    private final ExpertBank experts;
    private final RankStep step;
    private final RankStep.Compute onHost = this::compute;
    private @Nullable DispatchPath dispatcher;

    /** The group's communicator, for a low-latency dispatcher; null across hosts. */
    private @Nullable Communicator flatComm;

    /** Low-latency dispatchers by their bound, built on the first step of each. */
    private final Map<Integer, LowLatencyDispatcher> lowLatency = new HashMap<>();

    /** The path the step being run exchanges on. */
    private @Nullable DispatchPath current;

    private @Nullable MicroBatchStep microBatches;
    private final DispatchCounts counts = new DispatchCounts();
    private final ExpertSums sums = new ExpertSums();
    private FloatBuffer expertOutputs = Buffers.floats(0);
    private FloatBuffer combined = Buffers.floats(0);
    private FloatBuffer homeTokens = Buffers.floats(0);
    private @Nullable ExecutorService sharedThread;
    private ByteBuffer output = ByteBuffer.allocateDirect(0);

    public CpuRankRuntime(
            ModelConfig model, WeightSource weights, Placement placement, Communicator comm) {
        this(model, weights, placement, comm.rank());
        rebind(comm);
    }

    /** Loads {@code rank}'s experts; {@link #rebind} must give it a communicator before a step. */
    public CpuRankRuntime(ModelConfig model, WeightSource weights, Placement placement, int rank) {
        this.model = model;
        this.rank = rank;
        this.first = placement;
        this.experts = new ExpertBank(weights, placement, rank);
        this.step = new RankStep(weights, model, rank);
    }

    /**
     * {@inheritDoc} With two micro-batches ({@link ModelConfig#microBatches}) on a transport that
     * receives in place (shared memory) the step runs as one batch, on every rank of the group
     * alike: the second half's rows would land where the first half's still are.
     */
    @Override
    public void rebind(Communicator comm) {
        closeMicroBatches();
        Dispatcher flat = newDispatcher(comm);
        this.dispatcher = flat;
        this.flatComm = comm;
        this.lowLatency.clear();
        if (model.microBatches() == 2 && !comm.receivesInPlace()) {
            this.microBatches = new MicroBatchStep(flat, newDispatcher(comm), experts, model);
        }
    }

    /**
     * {@inheritDoc} The step runs as one batch (with two micro-batches, as over shared memory: the
     * host group receives in place); rows travel as the tokens came.
     *
     * @throws IllegalArgumentException when the model dispatches in FP8, which this path does not
     *     offer
     */
    @Override
    public void rebind(Communicator rail, Communicator hostGroup, HostTopology topology) {
        if (model.dispatchDType() != DispatchDType.BF16) {
            throw new IllegalArgumentException(
                    "model.dispatch_dtype: "
                            + model.dispatchDType()
                            + " (expected: "
                            + DispatchDType.BF16
                            + " on a group across hosts: rows cross hosts as the tokens came)");
        }
        closeMicroBatches();
        this.flatComm = null;
        this.lowLatency.clear();
        this.dispatcher =
                new HierarchicalDispatcher(
                        rail, hostGroup, topology, first, model.hidden(), model.topK());
    }

    private Dispatcher newDispatcher(Communicator comm) {
        return new Dispatcher(comm, first, model.hidden(), model.topK(), model.dispatchDType());
    }

    private void closeMicroBatches() {
        if (microBatches != null) {
            microBatches.close();
            microBatches = null;
        }
    }

    @Override
    public Placement placement(int layer) {
        return experts.layer(layer).placement();
    }

    /** On the host only: fp32 gate, up and down projections for each local slot. */
    @Override
    public WeightMemory weightMemory() {
        return new WeightMemory(
                0, experts.bytesPerExpert(), WeightMemory.localExperts(this, rank, model.layers()));
    }

    @Override
    public LayerSlots stage(int layer, Placement next) {
        return experts.stage(layer, next);
    }

    @Override
    public void recordRouting() {
        step.recordRouting();
    }

    @Override
    public void install(LayerSlots staged) {
        experts.install(staged);
    }

    /**
     * {@inheritDoc} The routing arrays are read, never written. A low-latency step runs as one
     * batch on the group's flat communicator.
     *
     * @throws IllegalArgumentException for a low-latency step on a group across hosts, which this
     *     path does not offer
     */
    @Override
    public RankStepResult step(
            int layer,
            DType dtype,
            ByteBuffer tokens,
            int numTokens,
            RoutingInput routing,
            int capacity,
            int lowLatencyTokens) {
        final DispatchPath dispatcher = this.dispatcher;
        if (dispatcher == null) {
            throw new IllegalStateException("rank has no communicator yet: call rebind first");
        }
        DispatchPath path = lowLatencyTokens > 0 ? lowLatency(lowLatencyTokens) : dispatcher;
        path.use(experts.layer(layer).placement());
        if (microBatches != null && path == dispatcher) {
            microBatches.second().use(experts.layer(layer).placement());
        }
        current = path;
        return step.run(layer, dtype, tokens, numTokens, routing, capacity, onHost);
    }

    /** The low-latency dispatcher for {@code maxTokens} tokens a rank on the flat group. */
    private LowLatencyDispatcher lowLatency(int maxTokens) {
        if (flatComm == null) {
            throw new IllegalArgumentException(
                    "step.ll_max_tokens: "
                            + maxTokens
                            + " (expected: 0 on a group across hosts, which exchanges in normal"
                            + " mode)");
        }
        final Communicator comm = flatComm;
        return lowLatency.computeIfAbsent(
                maxTokens,
                bound ->
                        new LowLatencyDispatcher(
                                comm,
                                first,
                                model.hidden(),
                                model.topK(),
                                model.dispatchDType(),
                                bound));
    }

    /** Stops the shared-expert thread and the micro-batches' progress thread, if started. */
    @Override
    public void close() {
        closeMicroBatches();
        if (sharedThread != null) {
            sharedThread.shutdownNow();
        }
    }

    /** The thread that runs shared experts beside the rank thread, started on first use. */
    private ExecutorService sharedThread() {
        if (sharedThread == null) {
            sharedThread =
                    Executors.newSingleThreadExecutor(
                            r -> {
                                Thread t = new Thread(r, "moe-a2a-shared-expert-" + rank);
                                t.setDaemon(true);
                                return t;
                            });
        }
        return sharedThread;
    }

    private static void await(Future<?> shared) {
        try {
            shared.get();
        } catch (ExecutionException e) {
            throw new A2aException("shared expert failed: " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new A2aException("interrupted waiting for the shared expert", e);
        }
    }

    /** Dispatch, experts and combine on the host, rows in off-heap buffers. */
    private RankStep.Computed compute(
            int layer, DType dtype, ByteBuffer tokens, int numTokens, int[] ids, float[] weights) {
        final DispatchPath dispatcher = this.current;
        final int hidden = model.hidden();
        long t0 = System.nanoTime();
        // the shared expert needs only the rank's own tokens: it runs beside the exchanges
        Future<?> shared = null;
        if (experts.hasShared(layer)) {
            homeTokens = Buffers.ensure(homeTokens, (long) numTokens * hidden);
            dtype.decode(tokens, 0, homeTokens, 0, numTokens * hidden);
            final FloatBuffer x = homeTokens;
            shared = sharedThread().submit(() -> experts.forwardShared(layer, x, numTokens));
        }
        combined = Buffers.ensure(combined, (long) numTokens * hidden);
        counts.clear(dispatcher.worldSize(), model.experts());
        long dispatchNs;
        long expertNs;
        long combineNs;
        if (microBatches != null && dispatcher == this.dispatcher) {
            long started = System.nanoTime();
            MicroBatchStep.Times times =
                    microBatches.run(
                            layer, dtype, tokens, numTokens, ids, weights, combined, counts);
            dispatchNs = (started - t0) + times.dispatchNs();
            expertNs = times.expertNs();
            combineNs = times.combineNs();
        } else {
            DispatchResult result = dispatcher.dispatch(tokens, numTokens, dtype, ids, weights);
            long t1 = System.nanoTime();
            expertOutputs = Buffers.ensure(expertOutputs, (long) result.numExpertRows() * hidden);
            experts.forward(layer, result, expertOutputs);
            long t2 = System.nanoTime();
            sums.write(expertOutputs, result.handle(), dispatcher.combineRows(result.handle()));
            dispatcher.combine(result.handle(), combined);
            counts.add(dispatcher, result.handle());
            dispatchNs = t1 - t0;
            expertNs = t2 - t1;
            combineNs = System.nanoTime() - t2;
        }
        long t3 = System.nanoTime();
        if (shared != null) {
            await(shared);
            experts.addShared(combined, numTokens);
        }
        int outBytes = numTokens * hidden * dtype.sizeBytes();
        if (output.capacity() < outBytes) {
            output = ByteBuffer.allocateDirect(outBytes).order(ByteOrder.LITTLE_ENDIAN);
        }
        dtype.encode(
                MemorySegment.ofBuffer(combined),
                0,
                MemorySegment.ofBuffer(output),
                0,
                numTokens * hidden);
        return new RankStep.Computed(
                output,
                counts.tokensPerRank,
                counts.pairsPerRank,
                counts.sentRowsTo,
                counts.tokensPerExpert,
                counts.recvRowsFrom,
                counts.recvTokens,
                counts.dispatchRowBytes,
                counts.combineRowBytes,
                dispatchNs,
                expertNs,
                combineNs + (System.nanoTime() - t3));
    }
}
