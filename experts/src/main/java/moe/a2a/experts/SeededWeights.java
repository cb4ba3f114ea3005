package moe.a2a.experts;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import moe.a2a.kernels.DType;

/**
 * Weights drawn from a seeded generator. Each matrix has its own stream derived from (seed, layer,
 * expert, matrix), so a rank can draw just its experts and still agree with every other rank and
 * with any client that knows the seed. Values are uniform in {@code ±1/sqrt(fanIn)} so activations
 * keep their scale through the layer; expert weights are then rounded to bf16, as a bf16
 * checkpoint's are, and held so. Immutable.
 */
public record SeededWeights(long seed, int experts, int hidden, int ffn, int layers)
        implements WeightSource {
    private static final int W1 = 1;
    private static final int W3 = 3;
    private static final int W2 = 2;
    private static final int GATE = 4;
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED;

    /**
     * @throws IllegalArgumentException naming the dimension that is not positive
     */
    public SeededWeights {
        new ModelConfig(experts, hidden, ffn, 1, layers);
    }

    @Override
    public DType dtype() {
        return DType.BF16;
    }

    /** {@link #heldExpert}'s bf16 weights, widened to fp32. */
    @Override
    public ExpertWeights expert(int layer, int expert) {
        return heldExpert(layer, expert).widened();
    }

    @Override
    public Bf16Expert heldExpert(int layer, int expert) {
        return new Bf16Expert(
                hidden,
                ffn,
                drawn(stream(layer, expert, W1), (long) ffn * hidden, hidden),
                drawn(stream(layer, expert, W3), (long) ffn * hidden, hidden),
                drawn(stream(layer, expert, W2), (long) hidden * ffn, ffn));
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

    /** {@code count} values drawn from {@code random}, each rounded to bf16 as it is drawn. */
    private static MemorySegment drawn(SplittableRandom random, long count, int fanIn) {
        float scale = (float) (1 / Math.sqrt(fanIn));
        MemorySegment bf16 = Arena.ofAuto().allocate(2 * count, 64);
        for (long i = 0; i < count; i++) {
            float value = DType.BF16.round((float) (random.nextDouble(-1, 1) * scale));
            bf16.set(BF16, 2 * i, (short) (Float.floatToRawIntBits(value) >>> 16));
        }
        return bf16;
    }
}
