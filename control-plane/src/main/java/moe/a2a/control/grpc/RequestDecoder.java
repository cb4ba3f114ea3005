package moe.a2a.control.grpc;

import java.util.Arrays;
import java.util.List;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RoutingInput;
import moe.a2a.protocol.InvalidRequestException;
import moe.a2a.protocol.TensorCodec;
import moe.a2a.v1.Tensor;
import moe.a2a.v1.TopK;

/**
 * Validates Forward and Route inputs against the served model and turns them into data-plane
 * values. Every failure is an {@link InvalidRequestException} naming the field and the expectation;
 * nothing here touches shared state, so a bad request cannot affect another. Thread-safe.
 */
public final class RequestDecoder {
    private final ModelConfig model;
    private final int[] moeLayers;

    /**
     * @param moeLayers the model's own index of each MoE layer, ascending
     */
    public RequestDecoder(ModelConfig model, int[] moeLayers) {
        this.model = model;
        this.moeLayers = moeLayers.clone();
    }

    /**
     * The MoE layer (its position among the model's MoE layers) of the model's layer {@code layer}.
     *
     * @throws InvalidRequestException naming the layer and listing the MoE layers when it is dense
     *     or out of range
     */
    public int moeLayer(int layer) {
        int at = Arrays.binarySearch(moeLayers, layer);
        if (at < 0) {
            throw new InvalidRequestException(
                    "layer: "
                            + layer
                            + " (expected: one of the model's MoE layers "
                            + Arrays.toString(moeLayers)
                            + (layer >= 0 && layer < moeLayers[moeLayers.length - 1]
                                    ? "; layer " + layer + " is dense)"
                                    : ")"));
        }
        return at;
    }

    /** The token count {@code T} of a {@code [T, H]} hidden_states tensor, after checking it. */
    public int tokens(Tensor hidden, String field) {
        moe.a2a.kernels.DType dtype = TensorCodec.dtype(hidden.getDtype(), field);
        List<Long> shape = hidden.getShapeList();
        if (shape.size() != 2 || shape.get(1) != model.hidden() || shape.get(0) < 0) {
            throw new InvalidRequestException(
                    field
                            + ".shape: "
                            + shape
                            + " (expected: [T, "
                            + model.hidden()
                            + "] with T >= 0)");
        }
        long rows = shape.get(0);
        checkData(hidden, field, rows, model.hidden(), dtype);
        return Math.toIntExact(rows);
    }

    /**
     * The token count {@code T} of a {@code [T, E]} router_logits tensor sent without hidden states
     * (Route), after checking its shape.
     */
    public int logitsTokens(Tensor logits) {
        List<Long> shape = logits.getShapeList();
        if (shape.size() != 2 || shape.get(0) < 0 || shape.get(0) > Integer.MAX_VALUE) {
            throw new InvalidRequestException(
                    "router_logits.shape: "
                            + shape
                            + " (expected: [T, "
                            + model.experts()
                            + "] with T >= 0)");
        }
        return (int) (long) shape.get(0);
    }

    /** The routing of {@code numTokens} tokens from whichever oneof case is set. */
    public RoutingInput routing(
            TopK topk, Tensor logits, boolean hasTopk, boolean hasLogits, int numTokens) {
        if (hasTopk) {
            return topK(topk, numTokens);
        }
        if (hasLogits) {
            return new RoutingInput.Logits(logits(logits, numTokens));
        }
        return new RoutingInput.ModelGate();
    }

    private RoutingInput.TopK topK(TopK topk, int numTokens) {
        final int k = model.topK();
        if (topk.getK() != k) {
            throw new InvalidRequestException(
                    "topk.k: " + topk.getK() + " (expected: " + k + ", the model's top-k)");
        }
        long expected = (long) numTokens * k;
        checkTokenTimesK("topk.expert_ids", topk.getExpertIdsCount(), numTokens, k);
        checkTokenTimesK("topk.weights", topk.getWeightsCount(), numTokens, k);
        int[] ids = new int[(int) expected];
        float[] weights = new float[(int) expected];
        for (int t = 0; t < numTokens; t++) {
            for (int j = 0; j < k; j++) {
                int i = t * k + j;
                int id = topk.getExpertIds(i);
                if (id < 0 || id >= model.experts()) {
                    throw new InvalidRequestException(
                            "topk.expert_ids["
                                    + t
                                    + "]["
                                    + j
                                    + "]: "
                                    + id
                                    + " (expected: in [0, "
                                    + model.experts()
                                    + "))");
                }
                for (int p = 0; p < j; p++) {
                    if (ids[t * k + p] == id) {
                        throw new InvalidRequestException(
                                "topk.expert_ids["
                                        + t
                                        + "]["
                                        + j
                                        + "]: "
                                        + id
                                        + " repeats topk.expert_ids["
                                        + t
                                        + "]["
                                        + p
                                        + "] (expected: distinct experts per token)");
                    }
                }
                float w = topk.getWeights(i);
                if (!Float.isFinite(w)) {
                    throw new InvalidRequestException(
                            "topk.weights[" + t + "][" + j + "]: " + w + " (expected: finite)");
                }
                ids[i] = id;
                weights[i] = w;
            }
        }
        return new RoutingInput.TopK(ids, weights);
    }

    private float[] logits(Tensor logits, int numTokens) {
        moe.a2a.kernels.DType dtype = TensorCodec.dtype(logits.getDtype(), "router_logits");
        List<Long> shape = logits.getShapeList();
        if (shape.size() != 2 || shape.get(0) != numTokens || shape.get(1) != model.experts()) {
            throw new InvalidRequestException(
                    "router_logits.shape: "
                            + shape
                            + " (expected: ["
                            + numTokens
                            + ", "
                            + model.experts()
                            + "], [T, E])");
        }
        checkData(logits, "router_logits", numTokens, model.experts(), dtype);
        float[] values = TensorCodec.floats(logits);
        for (int i = 0; i < values.length; i++) {
            if (!Float.isFinite(values[i])) {
                throw new InvalidRequestException(
                        "router_logits["
                                + i / model.experts()
                                + "]["
                                + i % model.experts()
                                + "]: "
                                + values[i]
                                + " (expected: finite)");
            }
        }
        return values;
    }

    private static void checkData(
            Tensor tensor, String field, long rows, long cols, moe.a2a.kernels.DType dtype) {
        // no message holds more than 2 GiB, so more rows than that cannot be meant (nor counted)
        long maxRows = Integer.MAX_VALUE / (cols * dtype.sizeBytes());
        if (rows > maxRows) {
            throw new InvalidRequestException(
                    field
                            + ".shape[0]: "
                            + rows
                            + " (expected: at most "
                            + maxRows
                            + " rows of "
                            + cols
                            + " × "
                            + dtype.sizeBytes()
                            + " bytes)");
        }
        long expected = rows * cols * dtype.sizeBytes();
        if (tensor.getData().size() != expected) {
            throw new InvalidRequestException(
                    field
                            + ".data: "
                            + tensor.getData().size()
                            + " bytes (expected: "
                            + rows
                            + " × "
                            + cols
                            + " × "
                            + dtype.sizeBytes()
                            + " = "
                            + expected
                            + ")");
        }
    }

    private static void checkTokenTimesK(String field, int count, int numTokens, int k) {
        long expected = (long) numTokens * k;
        if (count != expected) {
            throw new InvalidRequestException(
                    field
                            + ": "
                            + count
                            + " values (expected: T × K = "
                            + numTokens
                            + " × "
                            + k
                            + " = "
                            + expected
                            + ")");
        }
    }
}
