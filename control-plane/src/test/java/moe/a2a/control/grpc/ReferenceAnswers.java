package moe.a2a.control.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import moe.a2a.dispatch.Gate;
import moe.a2a.experts.LayerCheck;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.WeightSource;
import moe.a2a.kernels.DType;
import moe.a2a.protocol.TensorCodec;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;

/** Checks a Forward answer against the single-process reference layer. Thread-safe. */
final class ReferenceAnswers {
    private final ReferenceMoeLayer reference;
    private final int hidden;
    private final int experts;
    private final int topK;
    private final int[] layerNumbers;

    ReferenceAnswers(WeightSource weights, int topK) {
        this.reference = new ReferenceMoeLayer(weights);
        this.layerNumbers = weights.layerNumbers();
        this.hidden = weights.hidden();
        this.experts = weights.experts();
        this.topK = topK;
    }

    void assertMatches(String where, ForwardRequest request, ForwardResponse response) {
        DType dtype = TensorCodec.dtype(request.getHiddenStates().getDtype(), "hidden_states");
        float[] x = TensorCodec.floats(request.getHiddenStates());
        int tokens = x.length / hidden;
        int[] ids = new int[tokens * topK];
        float[] w = new float[tokens * topK];
        if (request.hasTopk()) {
            for (int i = 0; i < ids.length; i++) {
                ids[i] = request.getTopk().getExpertIds(i);
                w[i] = request.getTopk().getWeights(i);
            }
        } else {
            float[] logits;
            synchronized (reference) {
                logits =
                        request.hasRouterLogits()
                                ? TensorCodec.floats(request.getRouterLogits())
                                : reference.gateLogits(layer(request), x, tokens);
            }
            Gate.softmaxTopK(logits, tokens, experts, topK, ids, w);
        }
        assertMatches(where, request, response, ids, w);
    }

    /**
     * As {@link #assertMatches(String, ForwardRequest, ForwardResponse)}, routed by {@code ids}.
     */
    void assertMatches(
            String where, ForwardRequest request, ForwardResponse response, int[] ids, float[] w) {
        DType dtype = TensorCodec.dtype(request.getHiddenStates().getDtype(), "hidden_states");
        float[] x = TensorCodec.floats(request.getHiddenStates());
        int tokens = x.length / hidden;
        float[] expected;
        synchronized (reference) {
            expected = reference.forward(layer(request), x, tokens, topK, ids, w);
        }
        for (int i = 0; i < expected.length; i++) {
            expected[i] = dtype.round(expected[i]);
        }
        float[] actual = new float[expected.length];
        ByteBuffer out =
                response.getHiddenStates()
                        .getData()
                        .asReadOnlyByteBuffer()
                        .order(ByteOrder.LITTLE_ENDIAN);
        assertThat(out.remaining()).as(where).isEqualTo(expected.length * dtype.sizeBytes());
        dtype.decode(out, 0, actual, 0, actual.length);
        LayerCheck.assertClose(where, dtype, actual, expected, hidden);
    }

    /** The reference's MoE layer for the request's model layer. */
    private int layer(ForwardRequest request) {
        return Arrays.binarySearch(layerNumbers, request.getLayer());
    }
}
