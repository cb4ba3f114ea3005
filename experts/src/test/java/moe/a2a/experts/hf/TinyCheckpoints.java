package moe.a2a.experts.hf;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.file.Path;
import java.util.SplittableRandom;

/** Small DeepSeek-V3 checkpoints with random weights, written from the formats alone. */
public final class TinyCheckpoints {
    private TinyCheckpoints() {}

    /**
     * {@code config.json} of a DeepSeek-V3 model of {@code layers} layers, the first dense, with
     * {@code experts} routed experts in 2 groups (1 kept), top-2, FP8 blocks of {@code block}.
     */
    public static JsonObject deepSeekV3Config(
            int layers, int hidden, int ffn, int experts, int block) {
        return deepSeekV3Config(layers, hidden, ffn, experts, block, 0);
    }

    /**
     * As {@link #deepSeekV3Config(int, int, int, int, int)}, with {@code shared} shared experts.
     */
    public static JsonObject deepSeekV3Config(
            int layers, int hidden, int ffn, int experts, int block, int shared) {
        JsonObject config = new JsonObject();
        JsonArray names = new JsonArray();
        names.add("DeepseekV3ForCausalLM");
        config.add("architectures", names);
        config.addProperty("model_type", "deepseek_v3");
        config.addProperty("num_hidden_layers", layers);
        config.addProperty("first_k_dense_replace", 1);
        config.addProperty("moe_layer_freq", 1);
        config.addProperty("hidden_size", hidden);
        config.addProperty("intermediate_size", 4 * hidden);
        config.addProperty("moe_intermediate_size", ffn);
        config.addProperty("n_routed_experts", experts);
        config.addProperty("n_shared_experts", shared);
        config.addProperty("num_experts_per_tok", 2);
        config.addProperty("n_group", 2);
        config.addProperty("topk_group", 1);
        config.addProperty("routed_scaling_factor", 2.5);
        config.addProperty("scoring_func", "sigmoid");
        config.addProperty("topk_method", "noaux_tc");
        config.addProperty("norm_topk_prob", true);
        JsonObject quant = new JsonObject();
        quant.addProperty("quant_method", "fp8");
        JsonArray size = new JsonArray();
        size.add(block);
        size.add(block);
        quant.add("weight_block_size", size);
        config.add("quantization_config", quant);
        return config;
    }

    /**
     * Writes a DeepSeek-V3 checkpoint with FP8 experts (random E4M3 values, NaN left out, and block
     * scales), {@code shared} shared experts (FP8 too), BF16 routers and F32 score-correction
     * biases, over {@code shards} files.
     */
    public static void deepSeekV3(
            Path dir,
            int layers,
            int hidden,
            int ffn,
            int experts,
            int shared,
            int shards,
            long seed)
            throws IOException {
        int block = 8;
        SplittableRandom random = new SplittableRandom(seed);
        CheckpointWriter w = new CheckpointWriter();
        for (int layer = 1; layer < layers; layer++) {
            for (int e = 0; e < experts; e++) {
                String prefix = "model.layers." + layer + ".mlp.experts." + e + ".";
                fp8Mlp(w, random, prefix, hidden, ffn, block);
            }
            if (shared > 0) {
                String prefix = "model.layers." + layer + ".mlp.shared_experts.";
                fp8Mlp(w, random, prefix, hidden, shared * ffn, block);
            }
            float[] gate = new float[experts * hidden];
            for (int i = 0; i < gate.length; i++) {
                gate[i] =
                        Float.intBitsToFloat(
                                Float.floatToIntBits((float) random.nextGaussian() * 0.3f)
                                        & 0xFFFF0000);
            }
            float[] bias = new float[experts];
            for (int i = 0; i < experts; i++) {
                bias[i] = (float) random.nextDouble(-0.05, 0.05);
            }
            w.add(
                    "model.layers." + layer + ".mlp.gate.weight",
                    "BF16",
                    new long[] {experts, hidden},
                    CheckpointWriter.bf16(gate));
            w.add(
                    "model.layers." + layer + ".mlp.gate.e_score_correction_bias",
                    "F32",
                    new long[] {experts},
                    CheckpointWriter.f32(bias));
        }
        w.write(dir, deepSeekV3Config(layers, hidden, ffn, experts, block, shared), shards);
    }

    /** An MLP's three projections under {@code prefix}, in FP8 with block scales. */
    private static void fp8Mlp(
            CheckpointWriter w,
            SplittableRandom random,
            String prefix,
            int hidden,
            int ffn,
            int block) {
        String[] proj = {"gate_proj", "up_proj", "down_proj"};
        for (int p = 0; p < 3; p++) {
            int rows = p == 2 ? hidden : ffn;
            int cols = p == 2 ? ffn : hidden;
            byte[] fp8 = new byte[rows * cols];
            for (int i = 0; i < fp8.length; i++) {
                int b;
                do {
                    b = random.nextInt(256);
                } while ((b & 0x7F) == 0x7F);
                fp8[i] = (byte) b;
            }
            int scaleRows = (rows + block - 1) / block;
            int scaleCols = (cols + block - 1) / block;
            float[] scales = new float[scaleRows * scaleCols];
            for (int i = 0; i < scales.length; i++) {
                scales[i] = (float) random.nextDouble(0.002, 0.02);
            }
            w.add(prefix + proj[p] + ".weight", "F8_E4M3", new long[] {rows, cols}, fp8);
            w.add(
                    prefix + proj[p] + ".weight_scale_inv",
                    "F32",
                    new long[] {scaleRows, scaleCols},
                    CheckpointWriter.f32(scales));
        }
    }
}
