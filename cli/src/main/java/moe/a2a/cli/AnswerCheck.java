package moe.a2a.cli;

import java.nio.ByteOrder;
import java.util.Arrays;
import moe.a2a.dispatch.CapacityFilter;
import moe.a2a.dispatch.Gate;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.WeightSource;
import moe.a2a.kernels.DType;
import moe.a2a.protocol.TensorCodec;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;

/**
 * Checks a served answer against {@link ReferenceMoeLayer} on the same inputs, routed by the
 * model's gate when the request does not give top-k. The tolerance is per row, relative to the
 * row's largest magnitude: 1e-5 for fp32 (summation order), and for bf16/fp16 two units in the last
 * place of that magnitude (the final rounding may land on the neighbouring value, and each rank's
 * partial sum is rounded once before it travels back). When the server dispatches in FP8 the tokens
 * reach the experts quantized (E4M3: 3 mantissa bits), so the tolerance is {@link #FP8_RELATIVE} of
 * the row's largest magnitude, from the error measured on the default model (docs/performance.md).
 * Under expert capacity the reference drops what the server drops (the step's tokens split evenly
 * over every rank, each rank keeping its share of each expert's capacity), which can be known only
 * for an answer that had its step to itself. Not thread-safe (the reference caches weights).
 */
final class AnswerCheck {
    /**
     * Tolerance relative to a row's largest magnitude when tokens travel as FP8: twice the worst
     * error measured on the default model (6.2 % over 96 answers of 128 tokens, every routing).
     */
    static final double FP8_RELATIVE = 0x1p-3;

    private final ReferenceMoeLayer reference;
    private final WeightSource weights;
    private final int experts;
    private final int hidden;
    private final int topK;
    private final boolean fp8Dispatch;
    private final double capacityFactor;
    private final int worldSize;
    private final CapacityFilter capacity;

    AnswerCheck(
            WeightSource weights,
            ReferenceMoeLayer reference,
            int experts,
            int hidden,
            int topK,
            boolean fp8Dispatch,
            double capacityFactor,
            int worldSize) {
        this.reference = reference;
        this.weights = weights;
        this.experts = experts;
        this.hidden = hidden;
        this.topK = topK;
        this.fp8Dispatch = fp8Dispatch;
        this.capacityFactor = capacityFactor;
        this.worldSize = worldSize;
        this.capacity = new CapacityFilter(experts);
    }

    /**
     * Whether the reference can know this answer's drops: always when dropless, else only when the
     * request had its step to itself.
     */
    boolean checkable(ForwardResponse response) {
        return capacityFactor == 0 || response.getStats().getStepRequests() == 1;
    }

    /**
     * Zeroes the weights of the pairs the server drops over capacity for a step of these tokens.
     */
    private void dropOverCapacity(int[] ids, float[] weights, int numTokens) {
        if (capacityFactor == 0 || numTokens == 0) {
            return;
        }
        long total = CapacityFilter.stepCapacity(capacityFactor, numTokens, topK, experts);
        for (int r = 0; r < worldSize; r++) {
            int from = (int) ((long) r * numTokens / worldSize);
            int to = (int) ((long) (r + 1) * numTokens / worldSize);
            int share = CapacityFilter.share(total, from, to, numTokens);
            int[] rankIds = Arrays.copyOfRange(ids, from * topK, to * topK);
            float[] rankWeights = Arrays.copyOfRange(weights, from * topK, to * topK);
            int[] kept = capacity.apply(rankIds, rankWeights, to - from, topK, share);
            for (int i = 0; i < rankIds.length; i++) {
                if (kept[i] == CapacityFilter.DROPPED) {
                    weights[from * topK + i] = 0;
                }
            }
        }
    }

    /** The worst error over tolerance ratio of the answer; at most 1 means it passes. */
    double worstRatio(ForwardRequest request, ForwardResponse response) {
        DType dtype = TensorCodec.dtype(request.getHiddenStates().getDtype(), "hidden_states");
        // requests name the model's own layer; the reference counts MoE layers
        int layer = Arrays.binarySearch(this.weights.layerNumbers(), request.getLayer());
        float[] x = TensorCodec.floats(request.getHiddenStates());
        int numTokens = x.length / hidden;
        int[] ids = new int[numTokens * topK];
        float[] weights = new float[ids.length];
        if (request.hasTopk()) {
            for (int i = 0; i < ids.length; i++) {
                ids[i] = request.getTopk().getExpertIds(i);
                weights[i] = request.getTopk().getWeights(i);
            }
        } else {
            float[] logits =
                    request.hasRouterLogits()
                            ? TensorCodec.floats(request.getRouterLogits())
                            : reference.gateLogits(layer, x, numTokens);
            Gate.route(
                    this.weights.gateSpec(),
                    logits,
                    numTokens,
                    experts,
                    topK,
                    this.weights.gateBias(layer),
                    ids,
                    weights);
        }
        dropOverCapacity(ids, weights, numTokens);
        float[] expected = reference.forward(layer, x, numTokens, topK, ids, weights);
        float[] actual = new float[expected.length];
        if (response.getHiddenStates().getData().size() != expected.length * dtype.sizeBytes()) {
            return Double.POSITIVE_INFINITY;
        }
        dtype.decode(
                response.getHiddenStates()
                        .getData()
                        .asReadOnlyByteBuffer()
                        .order(ByteOrder.LITTLE_ENDIAN),
                0,
                actual,
                0,
                actual.length);
        double relative =
                fp8Dispatch
                        ? FP8_RELATIVE
                        : dtype == DType.FP32 ? 1e-5 : dtype == DType.BF16 ? 0x1p-6 : 0x1p-9;
        double worst = 0;
        for (int t = 0; t < numTokens; t++) {
            double rowMax = 0;
            for (int c = 0; c < hidden; c++) {
                rowMax = Math.max(rowMax, Math.abs(expected[t * hidden + c]));
            }
            double tolerance = relative * rowMax + 1e-7;
            for (int c = 0; c < hidden; c++) {
                int i = t * hidden + c;
                double err = Math.abs((double) actual[i] - dtype.round(expected[i]));
                worst =
                        Math.max(
                                worst,
                                Double.isNaN(err) ? Double.POSITIVE_INFINITY : err / tolerance);
            }
        }
        return worst;
    }
}
