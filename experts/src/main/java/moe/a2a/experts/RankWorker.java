package moe.a2a.experts;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import moe.a2a.comm.Communicator;
import moe.a2a.dispatch.DType;
import moe.a2a.dispatch.DispatchLayout;
import moe.a2a.dispatch.DispatchResult;
import moe.a2a.dispatch.Dispatcher;
import moe.a2a.dispatch.Gate;
import moe.a2a.dispatch.Placement;

/**
 * The runtime of one rank: for each step, route its home tokens, dispatch them, run the local
 * experts on what arrived, combine back, and encode the output in the step's dtype. Every rank of
 * the group must run every step, with zero tokens if it has none. Owned by the rank thread.
 */
public final class RankWorker {
    private final ModelConfig model;
    private final Dispatcher dispatcher;
    private final ExpertBank experts;
    private final FloatBuffer[] gates;
    private final int worldSize;
    private FloatBuffer expertOutputs = Buffers.floats(0);
    private FloatBuffer gateInput = Buffers.floats(0);
    private FloatBuffer gateLogits = Buffers.floats(0);
    private float[] combined = new float[0];
    private float[] logits = new float[0];
    private int[] topkIds = new int[0];
    private float[] topkWeights = new float[0];
    private ByteBuffer output = ByteBuffer.allocateDirect(0);

    public RankWorker(ModelConfig model, WeightSource weights, Placement placement, Communicator comm) {
        this.model = model;
        this.worldSize = comm.size();
        this.dispatcher = new Dispatcher(comm, placement, model.hidden(), model.topK());
        this.experts = new ExpertBank(weights, placement, comm.rank());
        this.gates = new FloatBuffer[model.layers()];
        for (int layer = 0; layer < model.layers(); layer++) {
            float[] g = weights.gate(layer);
            gates[layer] = Buffers.floats(g.length).put(g).flip();
        }
    }

    public int rank() {
        return dispatcher.communicator().rank();
    }

    /**
     * Runs one step for this rank's {@code numTokens} tokens ({@code [T, H]} of {@code dtype} in
     * {@code tokens}, from index 0).
     */
    public RankStepResult step(int layer, DType dtype, ByteBuffer tokens, int numTokens, RoutingInput routing) {
        final int hidden = model.hidden();
        final int topK = model.topK();
        long t0 = System.nanoTime();
        route(layer, dtype, tokens, numTokens, routing);
        long t1 = System.nanoTime();
        DispatchResult result = dispatcher.dispatch(tokens, numTokens, dtype, topkIds, topkWeights);
        long t2 = System.nanoTime();
        expertOutputs = Buffers.ensure(expertOutputs, (long) result.numExpertRows() * hidden);
        experts.forward(layer, result, expertOutputs);
        long t3 = System.nanoTime();
        if (combined.length < numTokens * hidden) {
            combined = new float[numTokens * hidden];
        }
        dispatcher.combine(expertOutputs, result.handle(), combined);
        int outBytes = numTokens * hidden * dtype.sizeBytes();
        if (output.capacity() < outBytes) {
            output = ByteBuffer.allocateDirect(outBytes).order(ByteOrder.LITTLE_ENDIAN);
        }
        dtype.encode(combined, 0, numTokens * hidden, output, 0);
        long t4 = System.nanoTime();

        DispatchLayout layout = result.handle().layout();
        long[] perRank = new long[worldSize];
        for (int r = 0; r < worldSize; r++) {
            perRank[r] = layout.tokensPerRank(r);
        }
        long[] perExpert = new long[model.experts()];
        for (int e = 0; e < perExpert.length; e++) {
            perExpert[e] = layout.tokensPerExpert(e);
        }
        return new RankStepResult(output, perRank, perExpert, result.numRecvTokens(),
                t1 - t0, t2 - t1, t3 - t2, t4 - t3);
    }

    private void route(int layer, DType dtype, ByteBuffer tokens, int numTokens, RoutingInput routing) {
        final int topK = model.topK();
        final int numExperts = model.experts();
        if (routing instanceof RoutingInput.TopK given) {
            topkIds = given.ids();
            topkWeights = given.weights();
            return;
        }
        if (topkIds.length < numTokens * topK) {
            topkIds = new int[numTokens * topK];
            topkWeights = new float[numTokens * topK];
        }
        if (routing instanceof RoutingInput.Logits given) {
            Gate.softmaxTopK(given.logits(), numTokens, numExperts, topK, topkIds, topkWeights);
            return;
        }
        final int hidden = model.hidden();
        gateInput = Buffers.ensure(gateInput, (long) numTokens * hidden);
        gateLogits = Buffers.ensure(gateLogits, (long) numTokens * numExperts);
        dtype.decode(tokens, 0, gateInput, 0, numTokens * hidden);
        Sgemm.xwT(gateInput, numTokens, hidden, gates[layer], numExperts, gateLogits);
        if (logits.length < numTokens * numExperts) {
            logits = new float[numTokens * numExperts];
        }
        gateLogits.get(0, logits, 0, numTokens * numExperts);
        Gate.softmaxTopK(logits, numTokens, numExperts, topK, topkIds, topkWeights);
    }
}
