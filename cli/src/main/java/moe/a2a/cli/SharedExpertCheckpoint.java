package moe.a2a.cli;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import moe.a2a.experts.SafetensorsWriter;
import moe.a2a.kernels.DType;

/**
 * Writes a one-layer Qwen2-MoE checkpoint with seeded BF16 weights and a gated shared expert
 * ({@code config.json} and {@code model.safetensors}), so that gpu-check can serve a shared-expert
 * checkpoint end to end without one on disk. Weights are uniform in {@code ±1/sqrt(fan-in)}, which
 * keeps every projection's output near the size of its input.
 */
final class SharedExpertCheckpoint {
    private SharedExpertCheckpoint() {}

    static void write(
            Path dir, int experts, int hidden, int ffn, int sharedFfn, int topK, long seed)
            throws IOException {
        SplittableRandom random = new SplittableRandom(seed);
        SafetensorsWriter w = new SafetensorsWriter();
        for (int e = 0; e < experts; e++) {
            mlp(w, random, "model.layers.0.mlp.experts." + e + ".", hidden, ffn);
        }
        mlp(w, random, "model.layers.0.mlp.shared_expert.", hidden, sharedFfn);
        w.add(
                "model.layers.0.mlp.shared_expert_gate.weight",
                DType.BF16,
                new long[] {1, hidden},
                uniform(random, hidden, hidden));
        w.add(
                "model.layers.0.mlp.gate.weight",
                DType.BF16,
                new long[] {experts, hidden},
                uniform(random, experts * hidden, hidden));
        w.write(dir.resolve("model.safetensors"));

        JsonObject config = new JsonObject();
        JsonArray names = new JsonArray();
        names.add("Qwen2MoeForCausalLM");
        config.add("architectures", names);
        config.addProperty("model_type", "qwen2_moe");
        config.addProperty("num_hidden_layers", 1);
        config.addProperty("hidden_size", hidden);
        config.addProperty("moe_intermediate_size", ffn);
        config.addProperty("shared_expert_intermediate_size", sharedFfn);
        config.addProperty("num_experts", experts);
        config.addProperty("num_experts_per_tok", topK);
        Files.writeString(dir.resolve("config.json"), config.toString(), StandardCharsets.UTF_8);
    }

    /** An MLP's three projections under {@code prefix}, in the checkpoint's {@code [out, in]}. */
    private static void mlp(
            SafetensorsWriter w, SplittableRandom random, String prefix, int hidden, int ffn) {
        w.add(
                prefix + "gate_proj.weight",
                DType.BF16,
                new long[] {ffn, hidden},
                uniform(random, ffn * hidden, hidden));
        w.add(
                prefix + "up_proj.weight",
                DType.BF16,
                new long[] {ffn, hidden},
                uniform(random, ffn * hidden, hidden));
        w.add(
                prefix + "down_proj.weight",
                DType.BF16,
                new long[] {hidden, ffn},
                uniform(random, hidden * ffn, ffn));
    }

    private static float[] uniform(SplittableRandom random, int n, int fanIn) {
        double bound = 1 / Math.sqrt(fanIn);
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = (float) random.nextDouble(-bound, bound);
        }
        return values;
    }
}
