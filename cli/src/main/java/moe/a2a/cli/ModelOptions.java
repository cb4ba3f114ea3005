package moe.a2a.cli;

import java.nio.file.Path;
import moe.a2a.dispatch.DispatchDType;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.SafetensorsWeights;
import moe.a2a.experts.SeededWeights;
import moe.a2a.experts.WeightSource;
import moe.a2a.experts.hf.HfCheckpoint;
import moe.a2a.v1.ModelSpec;
import picocli.CommandLine.Option;

/**
 * The model flags shared by the server commands: a Hugging Face checkpoint directory, a safetensors
 * file, or a seeded model's shape.
 */
final class ModelOptions {
    @Option(
            names = "--model",
            paramLabel = "DIR",
            description =
                    "Hugging Face checkpoint directory: config.json (MixtralForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, DeepseekV2ForCausalLM, DeepseekV3ForCausalLM) with model.safetensors or model.safetensors.index.json and its shards; F32, BF16, F16 or F8_E4M3 with block scales. The shape, top-k and gate come from config.json.")
    Path model;

    @Option(
            names = "--weights",
            paramLabel = "FILE",
            description =
                    "Safetensors file with Mixtral or DeepSeek/Qwen expert names; shapes are read from it.")
    Path weights;

    @Option(
            names = "--seed",
            defaultValue = "42",
            description = "Seed of the generated weights (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(
            names = "--experts",
            defaultValue = "8",
            description = "Experts per layer, generated weights (default: ${DEFAULT-VALUE}).")
    int experts;

    @Option(
            names = "--hidden",
            defaultValue = "1024",
            description = "Hidden size, generated weights (default: ${DEFAULT-VALUE}).")
    int hidden;

    @Option(
            names = "--ffn",
            defaultValue = "2816",
            description = "Expert FFN size, generated weights (default: ${DEFAULT-VALUE}).")
    int ffn;

    @Option(
            names = "--layers",
            defaultValue = "1",
            description = "MoE layers, generated weights (default: ${DEFAULT-VALUE}).")
    int layers;

    @Option(
            names = "--top-k",
            description =
                    "Experts per token (default: the checkpoint's num_experts_per_tok, else 2).")
    Integer topK;

    @Option(
            names = "--dispatch-dtype",
            defaultValue = "bf16",
            paramLabel = "bf16|fp8",
            description =
                    "How tokens travel in dispatch: bf16 (as sent: bf16, fp16 or fp32 rows) or fp8"
                            + " (E4M3 with one fp32 scale per 128 channels, quantized once at the"
                            + " source; combine returns the request's dtype) (default:"
                            + " ${DEFAULT-VALUE}).")
    String dispatchDType;

    @Option(
            names = "--micro-batches",
            defaultValue = "1",
            paramLabel = "1|2",
            description =
                    "2: every rank runs its step as two halves, the exchanges of one beside the"
                            + " experts of the other (CPU ranks over tcp or in-process; shm runs"
                            + " one batch) (default: ${DEFAULT-VALUE}).")
    int microBatches;

    /**
     * The weights named by the flags: the checkpoint or file when given, else the seeded generator.
     */
    WeightSource open() {
        if (model != null && weights != null) {
            throw new IllegalArgumentException(
                    "--model and --weights: both given (expected: one of them)");
        }
        if (model != null) {
            return HfCheckpoint.open(model);
        }
        return weights != null
                ? SafetensorsWeights.open(weights)
                : new SeededWeights(seed, experts, hidden, ffn, layers);
    }

    /**
     * The served model: the weights' shape, top-k (the flag's, else the checkpoint's), dispatch.
     */
    ModelConfig config(WeightSource source) {
        if (microBatches < 1 || microBatches > ModelConfig.MAX_MICRO_BATCHES) {
            throw new IllegalArgumentException(
                    "--micro-batches: "
                            + microBatches
                            + " (expected: 1 or "
                            + ModelConfig.MAX_MICRO_BATCHES
                            + ")");
        }
        int k = topK != null ? topK : source instanceof HfCheckpoint hf ? hf.config().topK() : 2;
        return new ModelConfig(
                source.experts(),
                source.hidden(),
                source.ffn(),
                k,
                source.layers(),
                DispatchDType.parse("--dispatch-dtype", dispatchDType),
                microBatches);
    }

    /**
     * What a worker needs to load the same model (it reads the same file, or draws the same seed).
     */
    ModelSpec spec(ModelConfig config) {
        ModelSpec.Builder b =
                ModelSpec.newBuilder()
                        .setExperts(config.experts())
                        .setHidden(config.hidden())
                        .setFfn(config.ffn())
                        .setTopK(config.topK())
                        .setLayers(config.layers())
                        .setDispatchDtype(config.dispatchDType().label())
                        .setMicroBatches(config.microBatches());
        if (model != null) {
            return b.setModelDir(model.toAbsolutePath().toString()).build();
        }
        return weights != null
                ? b.setWeightsPath(weights.toAbsolutePath().toString()).build()
                : b.setSeed(seed).build();
    }

    /** A readable identity of the model, compared by workers that insist on one. */
    static String fingerprint(ModelSpec spec) {
        return "experts="
                + spec.getExperts()
                + ",hidden="
                + spec.getHidden()
                + ",ffn="
                + spec.getFfn()
                + ",topK="
                + spec.getTopK()
                + ",layers="
                + spec.getLayers()
                + ",weights="
                + (!spec.getModelDir().isEmpty()
                        ? spec.getModelDir()
                        : spec.getWeightsPath().isEmpty()
                                ? "seeded:" + spec.getSeed()
                                : spec.getWeightsPath());
    }
}
