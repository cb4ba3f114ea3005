package moe.a2a.gpu;

import moe.a2a.experts.WeightSource;
import moe.a2a.kernels.DType;

/**
 * The weights of a GPU check's one layer, made in memory: its shape, a zero router (the checks
 * route by given top-k), fp32 as loaded; the experts are the subclass's.
 */
abstract class OneLayerWeights implements WeightSource {
    private final int experts;
    private final int hidden;
    private final int ffn;
    private final String description;

    OneLayerWeights(int experts, int hidden, int ffn, String description) {
        this.experts = experts;
        this.hidden = hidden;
        this.ffn = ffn;
        this.description = description;
    }

    @Override
    public int experts() {
        return experts;
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
        return 1;
    }

    @Override
    public DType dtype() {
        return DType.FP32;
    }

    @Override
    public float[] gate(int layer) {
        return new float[experts * hidden];
    }

    @Override
    public String description() {
        return description;
    }
}
