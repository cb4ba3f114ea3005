package moe.a2a.gpu;

import java.nio.FloatBuffer;
import moe.a2a.dispatch.GateSpec;
import moe.a2a.experts.ExpertWeights;
import moe.a2a.experts.SharedExpert;
import moe.a2a.experts.WeightSource;
import moe.a2a.kernels.DType;
import org.jspecify.annotations.Nullable;

/**
 * Another source's weights rounded to bf16, as the GPU experts hold them (routed and shared
 * experts; the router and the shared expert's gate stay as they are): the reference the GPU layer
 * is compared against then differs from it only in accumulation order and the activation's
 * rounding.
 */
public final class Bf16Weights implements WeightSource {
    private final WeightSource source;
    private final @Nullable SharedExpert shared;

    public Bf16Weights(WeightSource source) {
        this(source, null);
    }

    /** With {@code shared} as every layer's shared expert (its gate, if any, kept in fp32). */
    Bf16Weights(WeightSource source, @Nullable SharedExpert shared) {
        this.source = source;
        this.shared = shared;
    }

    @Override
    public int experts() {
        return source.experts();
    }

    @Override
    public int hidden() {
        return source.hidden();
    }

    @Override
    public int ffn() {
        return source.ffn();
    }

    @Override
    public int layers() {
        return source.layers();
    }

    @Override
    public DType dtype() {
        return DType.BF16;
    }

    @Override
    public ExpertWeights expert(int layer, int expert) {
        ExpertWeights e = source.expert(layer, expert);
        return new ExpertWeights(
                e.hidden(), e.ffn(), rounded(e.w1()), rounded(e.w3()), rounded(e.w2()));
    }

    @Override
    public @Nullable SharedExpert sharedExpert(int layer) {
        SharedExpert s = shared != null ? shared : source.sharedExpert(layer);
        if (s == null) {
            return null;
        }
        ExpertWeights e = s.mlp();
        return new SharedExpert(
                new ExpertWeights(
                        e.hidden(), e.ffn(), rounded(e.w1()), rounded(e.w3()), rounded(e.w2())),
                s.gate());
    }

    @Override
    public float[] gate(int layer) {
        return source.gate(layer);
    }

    @Override
    public GateSpec gateSpec() {
        return source.gateSpec();
    }

    @Override
    public float @Nullable [] gateBias(int layer) {
        return source.gateBias(layer);
    }

    @Override
    public int[] layerNumbers() {
        return source.layerNumbers();
    }

    @Override
    public String architecture() {
        return source.architecture();
    }

    @Override
    public String description() {
        return source.description() + " (bf16)";
    }

    private static FloatBuffer rounded(FloatBuffer w) {
        for (int i = 0; i < w.capacity(); i++) {
            w.put(i, DType.BF16.round(w.get(i)));
        }
        return w;
    }
}
