package moe.a2a.experts.hf;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import moe.a2a.dispatch.GateSpec;

/**
 * What {@code config.json} says about a checkpoint's MoE layers, read with each architecture's own
 * keys. Immutable.
 *
 * @param moeLayers the model's own indices of its MoE layers, ascending
 * @param blockSize FP8 weight block size (rows and columns per scale), or 0 when not quantized
 * @param sharedExperts shared expert width beside the routed experts ({@code n_shared_experts ×
 *     moe_intermediate_size}, or {@code shared_expert_intermediate_size}); 0 when none
 */
public record HfConfig(
        HfArchitecture architecture,
        int hidden,
        int ffn,
        int experts,
        int topK,
        GateSpec gate,
        int[] moeLayers,
        int blockSize,
        int sharedExperts) {

    /**
     * Reads {@code dir/config.json}.
     *
     * @throws IllegalArgumentException naming the field that is missing, malformed or unsupported
     */
    public static HfConfig read(Path dir) {
        Path file = dir.resolve("config.json");
        JsonObject json;
        try {
            json =
                    JsonParser.parseString(Files.readString(file, StandardCharsets.UTF_8))
                            .getAsJsonObject();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(
                    file + ": not a JSON object (" + e.getMessage() + ")", e);
        }
        return parse(new Fields(json, file));
    }

    static HfConfig parse(Fields f) {
        HfArchitecture arch = architecture(f);
        int layers = f.integer("num_hidden_layers");
        int hidden = f.integer("hidden_size");
        int topK = f.integer("num_experts_per_tok");
        int blockSize = f.blockSize();
        return switch (arch) {
            case MIXTRAL ->
                    new HfConfig(
                            arch,
                            hidden,
                            f.integer("intermediate_size"),
                            f.integer("num_local_experts"),
                            topK,
                            GateSpec.MIXTRAL,
                            range(layers),
                            blockSize,
                            0);
            case QWEN2_MOE, QWEN3_MOE -> {
                int step = f.integerOr("decoder_sparse_step", 1);
                Set<Integer> dense = new HashSet<>(f.integers("mlp_only_layers"));
                List<Integer> moe = new ArrayList<>();
                for (int l = 0; l < layers; l++) {
                    if (!dense.contains(l) && (l + 1) % step == 0) {
                        moe.add(l);
                    }
                }
                yield new HfConfig(
                        arch,
                        hidden,
                        f.integer("moe_intermediate_size"),
                        f.integer("num_experts"),
                        topK,
                        new GateSpec(
                                GateSpec.Scoring.SOFTMAX,
                                f.bool("norm_topk_prob", false),
                                1,
                                1,
                                1f),
                        moe.stream().mapToInt(Integer::intValue).toArray(),
                        blockSize,
                        arch == HfArchitecture.QWEN2_MOE
                                ? f.integerOr("shared_expert_intermediate_size", 0)
                                : 0);
            }
            case DEEPSEEK_V2, DEEPSEEK_V3 -> {
                int ffn = f.integer("moe_intermediate_size");
                yield new HfConfig(
                        arch,
                        hidden,
                        ffn,
                        f.integer("n_routed_experts"),
                        topK,
                        arch == HfArchitecture.DEEPSEEK_V3 ? v3Gate(f) : v2Gate(f, topK),
                        deepSeekMoeLayers(f, layers),
                        blockSize,
                        f.integerOr("n_shared_experts", 0) * ffn);
            }
        };
    }

    /** From {@code first_k_dense_replace} on, every {@code moe_layer_freq}-th layer. */
    private static int[] deepSeekMoeLayers(Fields f, int layers) {
        int first = f.integerOr("first_k_dense_replace", 0);
        int freq = f.integerOr("moe_layer_freq", 1);
        List<Integer> moe = new ArrayList<>();
        for (int l = first; l < layers; l++) {
            if (l % freq == 0) {
                moe.add(l);
            }
        }
        return moe.stream().mapToInt(Integer::intValue).toArray();
    }

    /** DeepSeek-V3's {@code noaux_tc}: sigmoid, bias, groups by their two best, scaled. */
    private static GateSpec v3Gate(Fields f) {
        f.expect("scoring_func", "sigmoid");
        f.expect("topk_method", "noaux_tc");
        return new GateSpec(
                GateSpec.Scoring.SIGMOID,
                f.bool("norm_topk_prob", true),
                f.integerOr("n_group", 1),
                f.integerOr("topk_group", 1),
                (float) f.number("routed_scaling_factor", 1.0));
    }

    /**
     * DeepSeek-V2: softmax, {@code greedy} or {@code group_limited_greedy} (groups by their best);
     * weights renormalised when {@code norm_topk_prob} (and K > 1), else scaled by {@code
     * routed_scaling_factor}, as its modeling code does.
     */
    private static GateSpec v2Gate(Fields f, int topK) {
        f.expect("scoring_func", "softmax");
        String method = f.stringOr("topk_method", "greedy");
        boolean grouped = method.equals("group_limited_greedy");
        if (!grouped && !method.equals("greedy")) {
            throw new IllegalArgumentException(
                    f.file()
                            + ": topk_method: "
                            + method
                            + " (expected: greedy or group_limited_greedy)");
        }
        boolean renormalize = topK > 1 && f.bool("norm_topk_prob", false);
        return new GateSpec(
                GateSpec.Scoring.SOFTMAX,
                renormalize,
                grouped ? f.integer("n_group") : 1,
                grouped ? f.integer("topk_group") : 1,
                renormalize ? 1f : (float) f.number("routed_scaling_factor", 1.0));
    }

    private static HfArchitecture architecture(Fields f) {
        JsonElement classes = f.json.get("architectures");
        if (classes != null && classes.isJsonArray() && !classes.getAsJsonArray().isEmpty()) {
            return HfArchitecture.of(
                    "architectures[0]", classes.getAsJsonArray().get(0).getAsString());
        }
        return HfArchitecture.of("model_type", f.string("model_type"));
    }

    private static int[] range(int n) {
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = i;
        }
        return out;
    }

    /** Typed reads of config.json's fields, each error naming the field and the file. */
    record Fields(JsonObject json, Path file) {
        int integer(String key) {
            JsonElement v = json.get(key);
            if (v == null || v.isJsonNull()) {
                throw new IllegalArgumentException(file + ": " + key + " missing");
            }
            try {
                return v.getAsInt();
            } catch (RuntimeException e) {
                throw new IllegalArgumentException(
                        file + ": " + key + ": " + v + " (expected: an integer)", e);
            }
        }

        int integerOr(String key, int otherwise) {
            JsonElement v = json.get(key);
            return v == null || v.isJsonNull() ? otherwise : integer(key);
        }

        double number(String key, double otherwise) {
            JsonElement v = json.get(key);
            if (v == null || v.isJsonNull()) {
                return otherwise;
            }
            try {
                return v.getAsDouble();
            } catch (RuntimeException e) {
                throw new IllegalArgumentException(
                        file + ": " + key + ": " + v + " (expected: a number)", e);
            }
        }

        boolean bool(String key, boolean otherwise) {
            JsonElement v = json.get(key);
            if (v == null || v.isJsonNull()) {
                return otherwise;
            }
            if (!v.isJsonPrimitive() || !v.getAsJsonPrimitive().isBoolean()) {
                throw new IllegalArgumentException(
                        file + ": " + key + ": " + v + " (expected: true or false)");
            }
            return v.getAsBoolean();
        }

        String string(String key) {
            JsonElement v = json.get(key);
            if (v == null || !v.isJsonPrimitive()) {
                throw new IllegalArgumentException(
                        file + ": architectures and " + key + " missing (expected: one of them)");
            }
            return v.getAsString();
        }

        String stringOr(String key, String otherwise) {
            JsonElement v = json.get(key);
            return v == null || v.isJsonNull() ? otherwise : v.getAsString();
        }

        List<Integer> integers(String key) {
            JsonElement v = json.get(key);
            List<Integer> out = new ArrayList<>();
            if (v == null || v.isJsonNull()) {
                return out;
            }
            if (!v.isJsonArray()) {
                throw new IllegalArgumentException(
                        file + ": " + key + ": " + v + " (expected: a list of layer indices)");
            }
            for (JsonElement e : v.getAsJsonArray()) {
                out.add(e.getAsInt());
            }
            return out;
        }

        void expect(String key, String value) {
            JsonElement v = json.get(key);
            if (v != null && !v.isJsonNull() && !v.getAsString().equals(value)) {
                throw new IllegalArgumentException(
                        file + ": " + key + ": " + v.getAsString() + " (expected: " + value + ")");
            }
        }

        /** {@code quantization_config.weight_block_size} for FP8 checkpoints, else 0. */
        int blockSize() {
            JsonElement q = json.get("quantization_config");
            if (q == null || !q.isJsonObject()) {
                return 0;
            }
            JsonElement method = q.getAsJsonObject().get("quant_method");
            if (method == null || !method.getAsString().equals("fp8")) {
                throw new IllegalArgumentException(
                        file
                                + ": quantization_config.quant_method: "
                                + method
                                + " (expected: fp8)");
            }
            JsonElement block = q.getAsJsonObject().get("weight_block_size");
            if (block == null
                    || !block.isJsonArray()
                    || block.getAsJsonArray().size() != 2
                    || block.getAsJsonArray().get(0).getAsInt()
                            != block.getAsJsonArray().get(1).getAsInt()
                    || block.getAsJsonArray().get(0).getAsInt() <= 0) {
                throw new IllegalArgumentException(
                        file
                                + ": quantization_config.weight_block_size: "
                                + block
                                + " (expected: [B, B], e.g. [128, 128])");
            }
            JsonArray b = block.getAsJsonArray();
            return b.get(0).getAsInt();
        }
    }
}
