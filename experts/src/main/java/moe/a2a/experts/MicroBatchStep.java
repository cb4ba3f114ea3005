package moe.a2a.experts;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.Objects;
import moe.a2a.comm.AsyncCollectives;
import moe.a2a.comm.CollectiveHandle;
import moe.a2a.dispatch.DispatchResult;
import moe.a2a.dispatch.Dispatcher;
import moe.a2a.kernels.DType;
import org.jspecify.annotations.Nullable;

/**
 * A rank's dispatch, experts and combine as two micro-batches (the first and the second half of its
 * tokens), so that the exchanges overlap the experts: the second half's dispatch runs on the
 * progress thread ({@link AsyncCollectives}) while the experts run on the first half, and the first
 * half's combine while they run on the second. Every rank runs the same four exchanges in the same
 * order (a half may be empty). Each half has its own {@link Dispatcher}, on the same communicator:
 * a transport that receives in place would land the second dispatch where the first half's rows
 * still are, so {@link CpuRankRuntime} runs this only on one that does not. Owned by the rank
 * thread.
 */
final class MicroBatchStep implements AutoCloseable {
    /** Stage times of one step; the exchange time hidden behind the experts is in none of them. */
    record Times(long dispatchNs, long expertNs, long combineNs) {}

    private final Dispatcher first;
    private final Dispatcher second;
    private final AsyncCollectives progress;
    private final ExpertBank experts;
    private final int hidden;
    private final int topK;
    private FloatBuffer firstOutputs = Buffers.floats(0);
    private FloatBuffer secondOutputs = Buffers.floats(0);
    private int[] secondIds = new int[0];
    private float[] secondWeights = new float[0];
    private @Nullable DispatchResult secondResult;

    MicroBatchStep(Dispatcher first, Dispatcher second, ExpertBank experts, ModelConfig model) {
        this.first = first;
        this.second = second;
        this.progress = new AsyncCollectives(first.communicator());
        this.experts = experts;
        this.hidden = model.hidden();
        this.topK = model.topK();
    }

    /** The second half's dispatcher, to route by the layer's placement as the first does. */
    Dispatcher second() {
        return second;
    }

    /**
     * Dispatches, runs {@code layer}'s experts and combines {@code numTokens} tokens into {@code
     * combined} ({@code [T, H]} fp32); adds both halves' dispatches to {@code counts}.
     */
    Times run(
            int layer,
            DType dtype,
            ByteBuffer tokens,
            int numTokens,
            int[] ids,
            float[] weights,
            FloatBuffer combined,
            DispatchCounts counts) {
        final int a = (numTokens + 1) / 2;
        final int b = numTokens - a;
        final int rowBytes = hidden * dtype.sizeBytes();
        if (secondIds.length < b * topK) {
            secondIds = new int[b * topK];
            secondWeights = new float[b * topK];
        }
        System.arraycopy(ids, a * topK, secondIds, 0, b * topK);
        System.arraycopy(weights, a * topK, secondWeights, 0, b * topK);
        final ByteBuffer secondTokens =
                tokens.slice(a * rowBytes, b * rowBytes).order(ByteOrder.LITTLE_ENDIAN);
        try {
            long t0 = System.nanoTime();
            DispatchResult firstResult = first.dispatch(tokens, a, dtype, ids, weights);
            CollectiveHandle dispatched =
                    progress.run(
                            () ->
                                    secondResult =
                                            second.dispatch(
                                                    secondTokens,
                                                    b,
                                                    dtype,
                                                    secondIds,
                                                    secondWeights));
            long t1 = System.nanoTime();
            firstOutputs =
                    Buffers.ensure(firstOutputs, (long) firstResult.numExpertRows() * hidden);
            experts.forward(layer, firstResult, firstOutputs);
            long t2 = System.nanoTime();
            dispatched.await();
            long t3 = System.nanoTime();
            final FloatBuffer out = firstOutputs;
            CollectiveHandle combinedFirst =
                    progress.run(() -> first.combine(out, firstResult.handle(), combined));
            DispatchResult secondResult = Objects.requireNonNull(this.secondResult);
            secondOutputs =
                    Buffers.ensure(secondOutputs, (long) secondResult.numExpertRows() * hidden);
            experts.forward(layer, secondResult, secondOutputs);
            long t4 = System.nanoTime();
            combinedFirst.await();
            second.combine(
                    secondOutputs, secondResult.handle(), combined.slice(a * hidden, b * hidden));
            long t5 = System.nanoTime();
            counts.add(first, firstResult.handle());
            counts.add(second, secondResult.handle());
            return new Times((t1 - t0) + (t3 - t2), (t2 - t1) + (t4 - t3), t5 - t4);
        } catch (RuntimeException e) {
            // the progress thread may still hold the communicator: leave it only once it is done
            progress.drain();
            throw e;
        }
    }

    @Override
    public void close() {
        progress.close();
    }
}
