package moe.a2a.experts.hf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.nio.FloatBuffer;
import java.nio.file.Path;
import java.util.SplittableRandom;
import moe.a2a.dispatch.GateSpec;
import moe.a2a.experts.ExpertWeights;
import moe.a2a.experts.Fp8Expert;
import moe.a2a.experts.Fp8Matrix;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Checkpoints written from the formats alone, read back as the model's experts and routers. */
class HfCheckpointTest {
    static final int E = 8;
    static final int H = 16;
    static final int I = 12;
    static final int BLOCK = 8;

    @TempDir Path dir;

    @Test
    void shouldReadDeepSeekV3Fp8ExpertsFromShardsWhenLayersMixDenseAndMoe() throws Exception {
        SplittableRandom random = new SplittableRandom(1);
        CheckpointWriter w = new CheckpointWriter();
        // layer 0 is dense: its MLP (and every attention tensor) must never be read
        w.add("model.layers.0.mlp.gate_proj.weight", "BF16", new long[] {2, 2}, new byte[8]);
        w.add("model.embed_tokens.weight", "BF16", new long[] {4, H}, new byte[8 * H]);
        byte[][][][] fp8 = new byte[3][E][3][];
        float[][][][] scales = new float[3][E][3][];
        float[][] gates = new float[3][];
        float[][] biases = new float[3][];
        String[] proj = {"gate_proj", "up_proj", "down_proj"};
        for (int layer = 1; layer <= 2; layer++) {
            for (int e = 0; e < E; e++) {
                for (int p = 0; p < 3; p++) {
                    int rows = p == 2 ? H : I;
                    int cols = p == 2 ? I : H;
                    fp8[layer][e][p] = randomFp8(random, rows * cols);
                    scales[layer][e][p] = positive(random, ceil(rows, BLOCK) * ceil(cols, BLOCK));
                    String name = "model.layers." + layer + ".mlp.experts." + e + "." + proj[p];
                    w.add(name + ".weight", "F8_E4M3", shape(rows, cols), fp8[layer][e][p]);
                    w.add(
                            name + ".weight_scale_inv",
                            "F32",
                            shape(ceil(rows, BLOCK), ceil(cols, BLOCK)),
                            CheckpointWriter.f32(scales[layer][e][p]));
                }
            }
            gates[layer] = bf16Exact(random, E * H);
            biases[layer] = positive(random, E);
            w.add(
                    "model.layers." + layer + ".mlp.gate.weight",
                    "BF16",
                    shape(E, H),
                    CheckpointWriter.bf16(gates[layer]));
            w.add(
                    "model.layers." + layer + ".mlp.gate.e_score_correction_bias",
                    "F32",
                    new long[] {E},
                    CheckpointWriter.f32(biases[layer]));
        }
        w.write(dir, deepSeekConfig(), 3);

        try (HfCheckpoint checkpoint = HfCheckpoint.open(dir)) {
            assertThat(checkpoint.layerNumbers()).containsExactly(1, 2);
            assertThat(checkpoint.layers()).isEqualTo(2);
            assertThat(checkpoint.architecture()).isEqualTo("DeepseekV3ForCausalLM");
            assertThat(checkpoint.weightFormat()).isEqualTo("F8_E4M3 (8x8 block scales)");
            assertThat(checkpoint.gateSpec())
                    .isEqualTo(new GateSpec(GateSpec.Scoring.SIGMOID, true, 2, 1, 2.5f));
            for (int moe = 0; moe < 2; moe++) {
                int layer = moe + 1;
                for (int e = 0; e < E; e++) {
                    ExpertWeights x = checkpoint.expert(moe, e);
                    assertDequantized(x.w1(), fp8[layer][e][0], scales[layer][e][0], I, H);
                    assertDequantized(x.w3(), fp8[layer][e][1], scales[layer][e][1], I, H);
                    assertDequantized(x.w2(), fp8[layer][e][2], scales[layer][e][2], H, I);
                    // as stored, for a GPU rank that holds FP8
                    Fp8Expert stored = checkpoint.fp8Expert(moe, e);
                    assertStored(stored.w1(), fp8[layer][e][0], scales[layer][e][0], I, H);
                    assertStored(stored.w3(), fp8[layer][e][1], scales[layer][e][1], I, H);
                    assertStored(stored.w2(), fp8[layer][e][2], scales[layer][e][2], H, I);
                    assertDequantized(
                            stored.dequantized().w2(), fp8[layer][e][2], scales[layer][e][2], H, I);
                }
                assertThat(checkpoint.gate(moe)).containsExactly(gates[layer]);
                assertThat(checkpoint.gateBias(moe)).containsExactly(biases[layer]);
            }
        }
    }

    @Test
    void shouldReadMixtralBf16FromOneFile() throws Exception {
        SplittableRandom random = new SplittableRandom(2);
        CheckpointWriter w = new CheckpointWriter();
        float[][] w2 = new float[E][];
        for (int layer = 0; layer < 2; layer++) {
            for (int e = 0; e < E; e++) {
                String name = "model.layers." + layer + ".block_sparse_moe.experts." + e + ".";
                float[] down = bf16Exact(random, H * I);
                if (layer == 1) {
                    w2[e] = down;
                }
                w.add(
                        name + "w1.weight",
                        "BF16",
                        shape(I, H),
                        CheckpointWriter.bf16(bf16Exact(random, I * H)));
                w.add(
                        name + "w3.weight",
                        "BF16",
                        shape(I, H),
                        CheckpointWriter.bf16(bf16Exact(random, I * H)));
                w.add(name + "w2.weight", "BF16", shape(H, I), CheckpointWriter.bf16(down));
            }
            w.add(
                    "model.layers." + layer + ".block_sparse_moe.gate.weight",
                    "BF16",
                    shape(E, H),
                    CheckpointWriter.bf16(bf16Exact(random, E * H)));
        }
        JsonObject config = new JsonObject();
        config.add("architectures", names("MixtralForCausalLM"));
        config.addProperty("num_hidden_layers", 2);
        config.addProperty("hidden_size", H);
        config.addProperty("intermediate_size", I);
        config.addProperty("num_local_experts", E);
        config.addProperty("num_experts_per_tok", 2);
        w.write(dir, config, 1);

        try (HfCheckpoint checkpoint = HfCheckpoint.open(dir)) {
            assertThat(checkpoint.layerNumbers()).containsExactly(0, 1);
            assertThat(checkpoint.gateSpec()).isEqualTo(GateSpec.MIXTRAL);
            assertThat(checkpoint.gateBias(0)).isNull();
            assertThat(checkpoint.weightFormat()).isEqualTo("BF16");
            assertThat(checkpoint.fp8Expert(0, 0)).as("not stored in FP8").isNull();
            for (int e = 0; e < E; e++) {
                float[] read = new float[H * I];
                checkpoint.expert(1, e).w2().get(0, read);
                assertThat(read).containsExactly(w2[e]);
            }
        }
    }

    @Test
    void shouldFindQwenMoeLayersBySparseStepAndDenseList() throws Exception {
        JsonObject config = new JsonObject();
        config.add("architectures", names("Qwen3MoeForCausalLM"));
        config.addProperty("num_hidden_layers", 8);
        config.addProperty("hidden_size", H);
        config.addProperty("moe_intermediate_size", I);
        config.addProperty("num_experts", E);
        config.addProperty("num_experts_per_tok", 2);
        config.addProperty("norm_topk_prob", true);
        config.addProperty("decoder_sparse_step", 2);
        JsonArray dense = new JsonArray();
        dense.add(3);
        config.add("mlp_only_layers", dense);
        HfConfig c = HfConfig.parse(new HfConfig.Fields(config, dir.resolve("config.json")));
        assertThat(c.moeLayers()).containsExactly(1, 5, 7);
        assertThat(c.gate()).isEqualTo(new GateSpec(GateSpec.Scoring.SOFTMAX, true, 1, 1, 1f));
        assertThat(c.ffn()).isEqualTo(I);
    }

    @Test
    void shouldReadDeepSeekV2GateAsItsModelingCodeRoutes() {
        JsonObject config = TinyCheckpoints.deepSeekV3Config(4, H, I, E, BLOCK);
        config.add("architectures", names("DeepseekV2ForCausalLM"));
        config.remove("quantization_config");
        config.addProperty("scoring_func", "softmax");
        config.addProperty("topk_method", "group_limited_greedy");
        config.addProperty("routed_scaling_factor", 16.0);
        config.addProperty("norm_topk_prob", false);
        HfConfig c = HfConfig.parse(new HfConfig.Fields(config, dir.resolve("config.json")));
        assertThat(c.moeLayers()).containsExactly(1, 2, 3);
        assertThat(c.gate())
                .as("not renormalised: scaled by routed_scaling_factor")
                .isEqualTo(new GateSpec(GateSpec.Scoring.SOFTMAX, false, 2, 1, 16f));

        config.addProperty("norm_topk_prob", true);
        assertThat(HfConfig.parse(new HfConfig.Fields(config, dir.resolve("config.json"))).gate())
                .as("renormalised: the scaling factor is not applied")
                .isEqualTo(new GateSpec(GateSpec.Scoring.SOFTMAX, true, 2, 1, 1f));

        config.addProperty("topk_method", "noaux_tc");
        assertThatThrownBy(
                        () ->
                                HfConfig.parse(
                                        new HfConfig.Fields(config, dir.resolve("config.json"))))
                .hasMessageEndingWith(
                        "topk_method: noaux_tc (expected: greedy or group_limited_greedy)");
    }

    @Test
    void shouldNameTheFieldAndTheSupportedArchitecturesWhenUnknown() throws Exception {
        JsonObject config = new JsonObject();
        config.add("architectures", names("LlamaForCausalLM"));
        new CheckpointWriter().write(dir, config, 1);
        assertThatThrownBy(() -> HfCheckpoint.open(dir))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(
                        "config.json architectures[0]: LlamaForCausalLM (expected: one of"
                                + " MixtralForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM,"
                                + " DeepseekV2ForCausalLM, DeepseekV3ForCausalLM)");
    }

    @Test
    void shouldNameTheTensorAndTheFileWhenMissingOrMisshapen() throws Exception {
        CheckpointWriter w = new CheckpointWriter();
        w.add(
                "model.layers.1.mlp.experts.0.gate_proj.weight",
                "BF16",
                shape(I, H + 1),
                new byte[2 * I * (H + 1)]);
        w.write(dir, deepSeekConfig(), 2);
        assertThatThrownBy(() -> HfCheckpoint.open(dir))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith(
                        "tensor model.layers.1.mlp.experts.0.gate_proj.weight.shape: [12, 17] in ")
                .hasMessageEndingWith("model-00001-of-00002.safetensors (expected: [12, 16])");

        Path other = dir.resolveSibling("other");
        CheckpointWriter partial = new CheckpointWriter();
        partial.add(
                "model.layers.1.mlp.experts.0.gate_proj.weight",
                "BF16",
                shape(I, H),
                new byte[2 * I * H]);
        partial.write(other, deepSeekConfig(), 2);
        assertThatThrownBy(() -> HfCheckpoint.open(other))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(
                        "tensor missing: model.layers.1.mlp.experts.0.up_proj.weight (expected in "
                                + other.resolve("model.safetensors.index.json")
                                + ")");
    }

    @Test
    void shouldReadQwen2MoeSharedExpertAndItsGate() throws Exception {
        SplittableRandom random = new SplittableRandom(3);
        int shared = 20;
        CheckpointWriter w = new CheckpointWriter();
        for (int e = 0; e < E; e++) {
            String name = "model.layers.0.mlp.experts." + e + ".";
            w.add(
                    name + "gate_proj.weight",
                    "BF16",
                    shape(I, H),
                    CheckpointWriter.bf16(bf16Exact(random, I * H)));
            w.add(
                    name + "up_proj.weight",
                    "BF16",
                    shape(I, H),
                    CheckpointWriter.bf16(bf16Exact(random, I * H)));
            w.add(
                    name + "down_proj.weight",
                    "BF16",
                    shape(H, I),
                    CheckpointWriter.bf16(bf16Exact(random, H * I)));
        }
        float[] down = bf16Exact(random, H * shared);
        float[] gate = bf16Exact(random, H);
        w.add(
                "model.layers.0.mlp.shared_expert.gate_proj.weight",
                "BF16",
                shape(shared, H),
                CheckpointWriter.bf16(bf16Exact(random, shared * H)));
        w.add(
                "model.layers.0.mlp.shared_expert.up_proj.weight",
                "BF16",
                shape(shared, H),
                CheckpointWriter.bf16(bf16Exact(random, shared * H)));
        w.add(
                "model.layers.0.mlp.shared_expert.down_proj.weight",
                "BF16",
                shape(H, shared),
                CheckpointWriter.bf16(down));
        w.add(
                "model.layers.0.mlp.shared_expert_gate.weight",
                "BF16",
                shape(1, H),
                CheckpointWriter.bf16(gate));
        w.add(
                "model.layers.0.mlp.gate.weight",
                "BF16",
                shape(E, H),
                CheckpointWriter.bf16(bf16Exact(random, E * H)));
        JsonObject config = new JsonObject();
        config.add("architectures", names("Qwen2MoeForCausalLM"));
        config.addProperty("num_hidden_layers", 1);
        config.addProperty("hidden_size", H);
        config.addProperty("moe_intermediate_size", I);
        config.addProperty("shared_expert_intermediate_size", shared);
        config.addProperty("num_experts", E);
        config.addProperty("num_experts_per_tok", 2);
        w.write(dir, config, 2);

        try (HfCheckpoint checkpoint = HfCheckpoint.open(dir)) {
            assertThat(checkpoint.gateSpec())
                    .as("Qwen2-MoE does not renormalise unless norm_topk_prob says so")
                    .isEqualTo(new GateSpec(GateSpec.Scoring.SOFTMAX, false, 1, 1, 1f));
            moe.a2a.experts.SharedExpert s = checkpoint.sharedExpert(0);
            assertThat(s.mlp().ffn()).isEqualTo(shared);
            float[] read = new float[H * shared];
            s.mlp().w2().get(0, read);
            assertThat(read).containsExactly(down);
            assertThat(s.gate()).containsExactly(gate);
        }
    }

    private static void assertStored(
            Fp8Matrix actual, byte[] fp8, float[] scales, int rows, int cols) {
        assertThat(actual.rows()).isEqualTo(rows);
        assertThat(actual.cols()).isEqualTo(cols);
        assertThat(actual.block()).isEqualTo(BLOCK);
        byte[] codes = new byte[rows * cols];
        actual.codes().get(0, codes);
        assertThat(codes).isEqualTo(fp8);
        assertThat(actual.scales()).containsExactly(scales);
    }

    private static JsonObject deepSeekConfig() {
        return TinyCheckpoints.deepSeekV3Config(3, H, I, E, BLOCK);
    }

    /** The weight as the checkpoint defines it: each E4M3 value times its block's scale. */
    private static void assertDequantized(
            FloatBuffer actual, byte[] fp8, float[] scales, int rows, int cols) {
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                float expected =
                        e4m3(fp8[r * cols + c])
                                * scales[(r / BLOCK) * ceil(cols, BLOCK) + c / BLOCK];
                assertThat(actual.get(r * cols + c)).as("[%d][%d]", r, c).isEqualTo(expected);
            }
        }
    }

    /** E4M3 from its definition: (-1)^s × 2^(e-7) × (1 + m/8), or 2^-6 × m/8 when e = 0. */
    private static float e4m3(byte b) {
        int s = (b >> 7) & 1;
        int e = (b >> 3) & 0xF;
        int m = b & 7;
        double v = e == 0 ? Math.pow(2, -6) * m / 8.0 : Math.pow(2, e - 7) * (1 + m / 8.0);
        return (float) (s == 1 ? -v : v);
    }

    /** Random E4M3 bytes, NaN (S.1111.111) left out. */
    private static byte[] randomFp8(SplittableRandom random, int n) {
        byte[] out = new byte[n];
        for (int i = 0; i < n; i++) {
            int b;
            do {
                b = random.nextInt(256);
            } while ((b & 0x7F) == 0x7F);
            out[i] = (byte) b;
        }
        return out;
    }

    private static float[] positive(SplittableRandom random, int n) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] = (float) random.nextDouble(0.001, 0.1);
        }
        return out;
    }

    /** Random values exact in BF16 (their low 16 bits zero). */
    private static float[] bf16Exact(SplittableRandom random, int n) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] =
                    Float.intBitsToFloat(
                            Float.floatToIntBits((float) random.nextGaussian()) & 0xFFFF0000);
        }
        return out;
    }

    private static JsonArray names(String name) {
        JsonArray a = new JsonArray();
        a.add(name);
        return a;
    }

    private static long[] shape(long rows, long cols) {
        return new long[] {rows, cols};
    }

    private static int ceil(int a, int b) {
        return (a + b - 1) / b;
    }
}
