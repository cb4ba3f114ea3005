package moe.a2a.experts;

import java.nio.FloatBuffer;
import java.util.SplittableRandom;
import moe.a2a.kernels.DType;

/**
 * Weights drawn from a seeded generator. Each matrix has its own stream derived from (seed, layer,
 * expert, matrix), so a rank can draw just its experts and still agree with every other rank and
 * with any client that knows the seed. Values are uniform in {@code ±1/sqrt(fanIn)} so activations
 * keep their scale through the layer. Immutable.
 */
public record SeededWeights(long seed, int experts, int hidden, int ffn, int layers)
        implements WeightSource {
    private static final int W1 = 1;
    private static final int W3 = 3;
    private static final int W2 = 2;
    private static final int GATE = 4;

    /**
     * @throws IllegalArgumentException naming the dimension that is not positive
     */
    public SeededWeights {
        new ModelConfig(experts, hidden, ffn, 1, layers);
    }

    @Override
    public DType dtype() {
        return DType.FP32;
    }

    @Override
    public ExpertWeights expert(int layer, int expert) {
        FloatBuffer w1 = Buffers.floats((long) ffn * hidden);
        FloatBuffer w3 = Buffers.floats((long) ffn * hidden);
        FloatBuffer w2 = Buffers.floats((long) hidden * ffn);
        fill(w1, stream(layer, expert, W1), hidden);
        fill(w3, stream(layer, expert, W3), hidden);
        fill(w2, stream(layer, expert, W2), ffn);
        return new ExpertWeights(hidden, ffn, w1, w3, w2);
    }

    @Override
    public float[] gate(int layer) {
        float[] gate = new float[experts * hidden];
        SplittableRandom random = stream(layer, 0, GATE);
        float scale = (float) (1 / Math.sqrt(hidden));
        for (int i = 0; i < gate.length; i++) {
            gate[i] = (float) (random.nextDouble(-1, 1) * scale);
        }
        return gate;
    }

    @Override
    public String description() {
        return "seeded:" + seed;
    }

    private SplittableRandom stream(int layer, int expert, int matrix) {
        long key = seed;
        key = key * 0x9E3779B97F4A7C15L + layer;
        key = key * 0x9E3779B97F4A7C15L + expert;
        key = key * 0x9E3779B97F4A7C15L + matrix;
        return new SplittableRandom(key);
    }

    private static void fill(FloatBuffer buffer, SplittableRandom random, int fanIn) {
        float scale = (float) (1 / Math.sqrt(fanIn));
        for (int i = 0; i < buffer.capacity(); i++) {
            buffer.put(i, (float) (random.nextDouble(-1, 1) * scale));
        }
    }
}
