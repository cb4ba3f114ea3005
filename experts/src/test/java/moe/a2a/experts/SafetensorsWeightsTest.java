package moe.a2a.experts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import moe.a2a.kernels.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class SafetensorsWeightsTest {
    static final int E = 4;
    static final int H = 16;
    static final int I = 24;
    static final int LAYERS = 2;

    @TempDir Path dir;

    /** Writes every tensor of {@code source} under {@code naming}'s names in {@code dtype}. */
    public static void write(Path path, WeightSource source, WeightNaming naming, DType dtype)
            throws IOException {
        SafetensorsWriter writer = new SafetensorsWriter();
        for (int l = 0; l < source.layers(); l++) {
            for (int e = 0; e < source.experts(); e++) {
                ExpertWeights w = source.expert(l, e);
                long[] up = {source.ffn(), source.hidden()};
                writer.add(naming.w1(l, e), dtype, up, toArray(w.w1()));
                writer.add(naming.w3(l, e), dtype, up, toArray(w.w3()));
                writer.add(
                        naming.w2(l, e),
                        dtype,
                        new long[] {source.hidden(), source.ffn()},
                        toArray(w.w2()));
            }
            writer.add(
                    naming.gate(l),
                    dtype,
                    new long[] {source.experts(), source.hidden()},
                    source.gate(l));
        }
        writer.write(path);
    }

    @ParameterizedTest
    @CsvSource({
        "MIXTRAL, FP32",
        "MIXTRAL, BF16",
        "DEEPSEEK, FP32",
        "DEEPSEEK, BF16",
        "DEEPSEEK, FP16"
    })
    void shouldGiveReferenceAnswerWhenLoadedFromFile(WeightNaming naming, DType dtype)
            throws Exception {
        long seed = 99 + naming.ordinal() * 7L + dtype.ordinal();
        WeightSource original = new SeededWeights(seed, E, H, I, LAYERS);
        Path file = dir.resolve("model.safetensors");
        write(file, original, naming, dtype);
        ArrayWeights expected = ArrayWeights.copyOf(original, dtype);

        try (SafetensorsWeights loaded = SafetensorsWeights.open(file)) {
            assertThat(loaded.naming()).isEqualTo(naming);
            assertThat(loaded.experts()).isEqualTo(E);
            assertThat(loaded.hidden()).isEqualTo(H);
            assertThat(loaded.ffn()).isEqualTo(I);
            assertThat(loaded.layers()).isEqualTo(LAYERS);
            assertThat(loaded.dtype()).isEqualTo(dtype);
            assertThat(toArray(loaded.expert(1, 3).w2())).containsExactly(expected.w2[1][3]);
            assertThat(loaded.gate(1)).containsExactly(expected.gate[1]);
            // the distributed layer on the loaded file equals the reference on the written values
            ModelConfig model = new ModelConfig(E, H, I, 2, LAYERS);
            MoeLayerTest.runAndCompareAgainst(3, model, loaded, expected, DType.FP32, seed);
        }
    }

    @Test
    void shouldNameTensorWhenShapeIsWrong() throws Exception {
        Path file = dir.resolve("bad.safetensors");
        WeightSource original = new SeededWeights(1, 2, H, I, 1);
        SafetensorsWriter writer = new SafetensorsWriter();
        WeightNaming n = WeightNaming.MIXTRAL;
        for (int e = 0; e < 2; e++) {
            ExpertWeights w = original.expert(0, e);
            writer.add(n.w1(0, e), DType.FP32, new long[] {I, H}, toArray(w.w1()));
            writer.add(n.w3(0, e), DType.FP32, new long[] {I, H}, toArray(w.w3()));
            // w2 written transposed-shaped: [I, H] instead of [H, I]
            writer.add(n.w2(0, e), DType.FP32, new long[] {I, H}, toArray(w.w2()));
        }
        writer.add(n.gate(0), DType.FP32, new long[] {2, H}, original.gate(0));
        writer.write(file);
        assertThatThrownBy(() -> SafetensorsWeights.open(file))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(
                        "model.layers.0.block_sparse_moe.experts.0.w2.weight.shape: [24, 16]")
                .hasMessageContaining("expected: [16, 24]");
    }

    @Test
    void shouldNameMissingTensorWhenGateIsAbsent() throws Exception {
        Path file = dir.resolve("nogate.safetensors");
        WeightSource original = new SeededWeights(1, 2, H, I, 1);
        SafetensorsWriter writer = new SafetensorsWriter();
        WeightNaming n = WeightNaming.DEEPSEEK;
        for (int e = 0; e < 2; e++) {
            ExpertWeights w = original.expert(0, e);
            writer.add(n.w1(0, e), DType.BF16, new long[] {I, H}, toArray(w.w1()));
            writer.add(n.w3(0, e), DType.BF16, new long[] {I, H}, toArray(w.w3()));
            writer.add(n.w2(0, e), DType.BF16, new long[] {H, I}, toArray(w.w2()));
        }
        writer.write(file);
        assertThatThrownBy(() -> SafetensorsWeights.open(file))
                .hasMessageContaining("tensor missing: model.layers.0.mlp.gate.weight");
    }

    @Test
    void shouldRejectFileWhenHeaderIsGarbage() throws Exception {
        Path file = dir.resolve("garbage.safetensors");
        Files.write(file, new byte[] {(byte) 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9});
        assertThatThrownBy(() -> SafetensorsWeights.open(file))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("safetensors header length");
    }

    static float[] toArray(java.nio.FloatBuffer buffer) {
        float[] out = new float[buffer.capacity()];
        buffer.get(0, out);
        return out;
    }
}
