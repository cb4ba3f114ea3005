package moe.a2a.it;

import com.google.protobuf.ByteString;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.experts.LayerCheck;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import moe.a2a.v1.MoeServiceGrpc;
import moe.a2a.v1.Tensor;
import moe.a2a.v1.TopK;

/**
 * Seeded Forward requests for a seeded model served by the CLI, and their answers checked against
 * the plain single-process reference. Thread-safe.
 */
final class SeededTraffic {
    private final long modelSeed;
    private final int experts;
    private final int hidden;
    private final int ffn;
    private final int topK;
    private final int layers;
    private final ReferenceMoeLayer reference;

    SeededTraffic(long seed, int experts, int hidden, int ffn, int topK, int layers) {
        this.modelSeed = seed;
        this.experts = experts;
        this.hidden = hidden;
        this.ffn = ffn;
        this.topK = topK;
        this.layers = layers;
        this.reference =
                new ReferenceMoeLayer(new SeededWeights(seed, experts, hidden, ffn, layers));
    }

    /** The server flags that serve this model. */
    List<String> modelFlags() {
        return List.of(
                "--experts",
                Integer.toString(experts),
                "--hidden",
                Integer.toString(hidden),
                "--ffn",
                Integer.toString(ffn),
                "--layers",
                Integer.toString(layers),
                "--top-k",
                Integer.toString(topK),
                "--seed",
                Long.toString(modelSeed));
    }

    /**
     * A seeded request: 1 to 24 tokens, BF16 or FP32, client top-k, layer {@code seed % layers}.
     */
    ForwardRequest request(long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        return request(seed, random, 1 + random.nextInt(24));
    }

    /** A seeded request of {@code tokens} tokens, otherwise as {@link #request(long)}. */
    ForwardRequest request(long seed, int tokens) {
        return request(seed, new SplittableRandom(seed), tokens);
    }

    private ForwardRequest request(long seed, SplittableRandom random, int tokens) {
        DType dtype = seed % 2 == 0 ? DType.BF16 : DType.FP32;
        ByteBuffer data =
                ByteBuffer.allocate(tokens * hidden * dtype.sizeBytes())
                        .order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < tokens * hidden; i++) {
            dtype.put(data, i * dtype.sizeBytes(), (float) random.nextGaussian());
        }
        TopK.Builder topk = TopK.newBuilder().setK(topK);
        for (int t = 0; t < tokens; t++) {
            int a = random.nextInt(experts);
            int b = (a + 1 + random.nextInt(experts - 1)) % experts;
            float w = 0.1f + 0.8f * (float) random.nextDouble();
            topk.addExpertIds(a).addExpertIds(b).addWeights(w).addWeights(1 - w);
        }
        return ForwardRequest.newBuilder()
                .setLayer((int) (seed % layers))
                .setHiddenStates(
                        Tensor.newBuilder()
                                .setDtype(
                                        dtype == DType.BF16
                                                ? moe.a2a.v1.DType.BF16
                                                : moe.a2a.v1.DType.FP32)
                                .addShape(tokens)
                                .addShape(hidden)
                                .setData(ByteString.copyFrom(data.array())))
                .setTopk(topk)
                .build();
    }

    /**
     * Sends request {@code seed} through {@code stub} with {@code deadlineSeconds}; null when the
     * answer matches the reference, else what differs. A failed call throws, as the stub does.
     */
    String forwardAndCheck(
            MoeServiceGrpc.MoeServiceBlockingStub stub, long seed, int deadlineSeconds) {
        ForwardRequest request = request(seed);
        return mismatch(
                request,
                stub.withDeadlineAfter(deadlineSeconds, TimeUnit.SECONDS).forward(request),
                seed);
    }

    /** Null when the answer matches the reference, else what differs. */
    String mismatch(ForwardRequest request, ForwardResponse response, long seed) {
        DType dtype =
                request.getHiddenStates().getDtype() == moe.a2a.v1.DType.BF16
                        ? DType.BF16
                        : DType.FP32;
        ByteBuffer in =
                request.getHiddenStates()
                        .getData()
                        .asReadOnlyByteBuffer()
                        .order(ByteOrder.LITTLE_ENDIAN);
        int tokens = in.remaining() / (hidden * dtype.sizeBytes());
        float[] x = new float[tokens * hidden];
        dtype.decode(in, 0, x, 0, x.length);
        int[] ids = new int[tokens * topK];
        float[] w = new float[tokens * topK];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = request.getTopk().getExpertIds(i);
            w[i] = request.getTopk().getWeights(i);
        }
        float[] expected;
        synchronized (reference) {
            expected = reference.forward(request.getLayer(), x, tokens, topK, ids, w);
        }
        for (int i = 0; i < expected.length; i++) {
            expected[i] = dtype.round(expected[i]);
        }
        ByteBuffer out =
                response.getHiddenStates()
                        .getData()
                        .asReadOnlyByteBuffer()
                        .order(ByteOrder.LITTLE_ENDIAN);
        if (out.remaining() != expected.length * dtype.sizeBytes()) {
            return "seed=" + seed + ": " + out.remaining() + " bytes";
        }
        float[] actual = new float[expected.length];
        dtype.decode(out, 0, actual, 0, actual.length);
        try {
            LayerCheck.assertClose("seed=" + seed, dtype, actual, expected, hidden);
            return null;
        } catch (AssertionError e) {
            return e.getMessage();
        }
    }
}
