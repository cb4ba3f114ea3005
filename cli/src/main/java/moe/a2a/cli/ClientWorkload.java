package moe.a2a.cli;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import moe.a2a.kernels.DType;
import moe.a2a.protocol.TensorCodec;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ModelInfo;
import moe.a2a.v1.TopK;

/**
 * Seeded Forward requests: Gaussian tokens, and routing either as top-k drawn from a Zipf law over
 * the experts ({@code skew = 0} is uniform), as router logits biased by the same law, or left to
 * the model's gate. Request {@code i} depends only on (seed, i). Immutable.
 */
final class ClientWorkload {
    enum Routing {
        TOPK,
        LOGITS,
        GATE
    }

    private final ModelInfo model;
    private final int tokens;
    private final DType dtype;
    private final Routing routing;
    private final double[] cdf;
    private final double skew;
    private final long seed;
    private final int layer;

    ClientWorkload(
            ModelInfo model,
            int tokens,
            DType dtype,
            Routing routing,
            double skew,
            long seed,
            int layer) {
        this.model = model;
        this.tokens = tokens;
        this.dtype = dtype;
        this.routing = routing;
        this.skew = skew;
        this.seed = seed;
        this.layer = layer;
        this.cdf = new double[model.getExperts()];
        double sum = 0;
        for (int e = 0; e < cdf.length; e++) {
            sum += Math.pow(e + 1, -skew);
            cdf[e] = sum;
        }
        for (int e = 0; e < cdf.length; e++) {
            cdf[e] /= sum;
        }
    }

    ForwardRequest request(int index) {
        SplittableRandom random = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + index);
        int h = model.getHidden();
        ByteBuffer data =
                ByteBuffer.allocate(tokens * h * dtype.sizeBytes()).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < tokens * h; i++) {
            dtype.put(data, i * dtype.sizeBytes(), (float) random.nextGaussian());
        }
        ForwardRequest.Builder b =
                ForwardRequest.newBuilder()
                        .setLayer(layer)
                        .setHiddenStates(
                                TensorCodec.tensor(
                                        dtype,
                                        tokens,
                                        h,
                                        com.google.protobuf.ByteString.copyFrom(data.array())));
        if (routing == Routing.TOPK) {
            b.setTopk(topK(random));
        } else if (routing == Routing.LOGITS) {
            int e = model.getExperts();
            float[] logits = new float[tokens * e];
            for (int i = 0; i < logits.length; i++) {
                logits[i] = (float) (random.nextGaussian() - skew * Math.log(i % e + 1));
            }
            b.setRouterLogits(TensorCodec.tensor(DType.FP32, tokens, e, logits));
        }
        return b.build();
    }

    private TopK topK(SplittableRandom random) {
        int k = model.getTopK();
        TopK.Builder b = TopK.newBuilder().setK(k);
        int[] chosen = new int[k];
        for (int t = 0; t < tokens; t++) {
            float sum = 0;
            float[] w = new float[k];
            for (int j = 0; j < k; j++) {
                int e;
                boolean repeat;
                do {
                    e = draw(random.nextDouble());
                    repeat = false;
                    for (int p = 0; p < j; p++) {
                        repeat |= chosen[p] == e;
                    }
                } while (repeat);
                chosen[j] = e;
                w[j] = 0.1f + (float) random.nextDouble();
                sum += w[j];
            }
            for (int j = 0; j < k; j++) {
                b.addExpertIds(chosen[j]).addWeights(w[j] / sum);
            }
        }
        return b.build();
    }

    private int draw(double u) {
        for (int e = 0; e < cdf.length; e++) {
            if (u < cdf[e]) {
                return e;
            }
        }
        return cdf.length - 1;
    }
}
