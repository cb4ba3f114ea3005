package moe.a2a.experts;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import moe.a2a.comm.Communicator;
import moe.a2a.dispatch.CapacityFilter;
import moe.a2a.dispatch.DType;
import moe.a2a.dispatch.DispatchHandle;
import moe.a2a.dispatch.DispatchLayout;
import moe.a2a.dispatch.DispatchResult;
import moe.a2a.dispatch.Dispatcher;
import moe.a2a.dispatch.Placement;
import org.jspecify.annotations.Nullable;

/**
 * The runtime of one rank: for each step, route its home tokens, dispatch them by the layer's
 * placement, run the local experts on what arrived, combine back, and encode the output in the
 * step's dtype. Every rank of the group must run every step, with zero tokens if it has none. Owned
 * by the rank thread, except {@link #stage}.
 */
public final class RankWorker implements RankRuntime {
    private final ModelConfig model;
    private final Placement first;
    private final ExpertBank experts;
    private final TokenRouter router;
    private final CapacityFilter capacityFilter;
    private @Nullable Dispatcher dispatcher;
    private FloatBuffer expertOutputs = Buffers.floats(0);
    private FloatBuffer combined = Buffers.floats(0);
    private ByteBuffer output = ByteBuffer.allocateDirect(0);

    public RankWorker(
            ModelConfig model, WeightSource weights, Placement placement, Communicator comm) {
        this(model, weights, placement, comm.rank());
        rebind(comm);
    }

    /** Loads {@code rank}'s experts; {@link #rebind} must give it a communicator before a step. */
    public RankWorker(ModelConfig model, WeightSource weights, Placement placement, int rank) {
        this.model = model;
        this.first = placement;
        this.experts = new ExpertBank(weights, placement, rank);
        this.router = new TokenRouter(weights, model.topK());
        this.capacityFilter = new CapacityFilter(model.experts());
    }

    @Override
    public void rebind(Communicator comm) {
        this.dispatcher =
                new Dispatcher(comm, first, model.hidden(), model.topK(), model.dispatchDType());
    }

    @Override
    public Placement placement(int layer) {
        return experts.layer(layer).placement();
    }

    @Override
    public LayerSlots stage(int layer, Placement next) {
        return experts.stage(layer, next);
    }

    @Override
    public void install(LayerSlots staged) {
        experts.install(staged);
    }

    /** {@inheritDoc} The routing arrays are read, never written. */
    @Override
    public RankStepResult step(
            int layer,
            DType dtype,
            ByteBuffer tokens,
            int numTokens,
            RoutingInput routing,
            int capacity) {
        final int hidden = model.hidden();
        final Dispatcher dispatcher = this.dispatcher;
        if (dispatcher == null) {
            throw new IllegalStateException("rank has no communicator yet: call rebind first");
        }
        dispatcher.use(experts.layer(layer).placement());
        long t0 = System.nanoTime();
        router.route(layer, dtype, tokens, numTokens, routing);
        int[] ids =
                capacityFilter.apply(
                        router.ids(), router.weights(), numTokens, model.topK(), capacity);
        long t1 = System.nanoTime();
        DispatchResult result =
                dispatcher.dispatch(tokens, numTokens, dtype, ids, router.weights());
        long t2 = System.nanoTime();
        expertOutputs = Buffers.ensure(expertOutputs, (long) result.numExpertRows() * hidden);
        experts.forward(layer, result, expertOutputs);
        long t3 = System.nanoTime();
        combined = Buffers.ensure(combined, (long) numTokens * hidden);
        dispatcher.combine(expertOutputs, result.handle(), combined);
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
        long t4 = System.nanoTime();

        DispatchLayout layout = result.handle().layout();
        long[] perRank = layout.tokensPerRankCopy();
        long[] perExpert = layout.tokensPerExpertCopy();
        // Dispatch moves full rows (payload, slots, weights); combine returns tokens only.
        DispatchHandle handle = result.handle();
        int rowBytes = handle.rowLayout().rowBytes();
        int payloadBytes = handle.rowLayout().combineRowBytes();
        long[] sent = new long[perRank.length];
        long[] received = new long[perRank.length];
        for (int r = 0; r < perRank.length; r++) {
            if (r != dispatcher.communicator().rank()) {
                sent[r] = perRank[r] * rowBytes + handle.recvRowsFrom(r) * payloadBytes;
                received[r] = handle.recvRowsFrom(r) * rowBytes + perRank[r] * payloadBytes;
            }
        }
        return new RankStepResult(
                output,
                perRank,
                perExpert,
                capacityFilter.droppedPerExpert(),
                result.numRecvTokens(),
                sent,
                received,
                t1 - t0,
                t2 - t1,
                t3 - t2,
                t4 - t3);
    }
}
