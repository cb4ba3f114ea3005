package moe.a2a.experts;

import java.nio.FloatBuffer;
import moe.a2a.kernels.DType;

/** Weights held in plain arrays: a source independent of the loaders under test. */
public final class ArrayWeights implements WeightSource {
    /** [layer][expert] w1, w3 ([I, H]) and w2 ([H, I]); [layer] gate ([E, H]). */
    final float[][][] w1;

    final float[][][] w3;
    final float[][][] w2;
    final float[][] gate;
    private final int hidden;
    private final int ffn;

    ArrayWeights(
            float[][][] w1, float[][][] w3, float[][][] w2, float[][] gate, int hidden, int ffn) {
        this.w1 = w1;
        this.w3 = w3;
        this.w2 = w2;
        this.gate = gate;
        this.hidden = hidden;
        this.ffn = ffn;
    }

    /** Copies every tensor of {@code source}, rounded to {@code dtype}. */
    public static ArrayWeights copyOf(WeightSource source, DType dtype) {
        int layers = source.layers();
        int experts = source.experts();
        float[][][] w1 = new float[layers][experts][];
        float[][][] w3 = new float[layers][experts][];
        float[][][] w2 = new float[layers][experts][];
        float[][] gate = new float[layers][];
        for (int l = 0; l < layers; l++) {
            for (int e = 0; e < experts; e++) {
                ExpertWeights ew = source.expert(l, e);
                w1[l][e] = round(ew.w1(), dtype);
                w3[l][e] = round(ew.w3(), dtype);
                w2[l][e] = round(ew.w2(), dtype);
            }
            gate[l] = source.gate(l).clone();
            for (int i = 0; i < gate[l].length; i++) {
                gate[l][i] = dtype.round(gate[l][i]);
            }
        }
        return new ArrayWeights(w1, w3, w2, gate, source.hidden(), source.ffn());
    }

    private static float[] round(FloatBuffer buffer, DType dtype) {
        float[] out = new float[buffer.capacity()];
        for (int i = 0; i < out.length; i++) {
            out[i] = dtype.round(buffer.get(i));
        }
        return out;
    }

    @Override
    public int experts() {
        return w1[0].length;
    }

    @Override
    public int hidden() {
        return hidden;
    }

    @Override
    public int ffn() {
        return ffn;
    }

    @Override
    public int layers() {
        return w1.length;
    }

    @Override
    public DType dtype() {
        return DType.FP32;
    }

    @Override
    public ExpertWeights expert(int layer, int expert) {
        return new ExpertWeights(
                hidden,
                ffn,
                Buffers.floats(w1[layer][expert].length).put(w1[layer][expert]),
                Buffers.floats(w3[layer][expert].length).put(w3[layer][expert]),
                Buffers.floats(w2[layer][expert].length).put(w2[layer][expert]));
    }

    @Override
    public float[] gate(int layer) {
        return gate[layer].clone();
    }

    @Override
    public String description() {
        return "arrays";
    }
}
