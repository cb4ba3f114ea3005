package moe.a2a.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.SplittableRandom;
import java.util.function.IntToDoubleFunction;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.Buffers;
import moe.a2a.experts.ExpertBank;
import moe.a2a.experts.SeededWeights;
import moe.a2a.experts.SharedExpert;
import moe.a2a.kernels.DType;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code add_shared} replayed in Java ({@link KernelReplays#addShared}) with the block size {@link
 * CudaKernels} launches, against the CPU path's shared expert ({@link ExpertBank#forwardShared}
 * then {@link ExpertBank#addShared}) on the same tokens (bf16, and fp16 and fp32 where the gate's
 * dot is exact), gate, shared rows and combined output: DeepSeek's ungated shared expert and
 * Qwen2-MoE's gated one, for hidden sizes below, above and not a multiple of the block size.
 */
class SharedExpertRowsTest {
    private static final int FFN = 16;

    @ParameterizedTest
    @CsvSource({"300, 5", "100, 3", "512, 4"})
    void shouldAddTheRowsAsTheCpuPathDoesBitForBitWhenUngated(int hidden, int tokens) {
        long seed = 500 + hidden;
        SplittableRandom random = new SplittableRandom(seed);
        Layer layer =
                Layer.run(
                        seed,
                        random,
                        bf16Tokens(random, hidden, tokens),
                        DType.BF16,
                        null,
                        hidden,
                        tokens);

        KernelReplays.assertSameBits("seed=" + seed, layer.replay(), layer.cpu(), tokens * hidden);
    }

    /**
     * Gate and tokens on grids ({@code k·2⁻¹²} and {@code k·2⁻⁶}, {@code |k| < 256}, exact in every
     * dtype), so every product and every partial sum is exact in double: the CPU path's sequential
     * sum and the kernel's strided tree give the same dot.
     */
    @ParameterizedTest
    @CsvSource({"300, 5, BF16", "100, 3, BF16", "512, 4, BF16", "300, 5, FP16", "100, 3, FP32"})
    void shouldMatchTheCpuPathBitForBitWhenGatedAndTheGateDotIsExact(
            int hidden, int tokens, DType dtype) {
        long seed = 700 + hidden;
        SplittableRandom random = new SplittableRandom(seed);
        ByteBuffer x = tokens(tokens * hidden, i -> random.nextInt(-255, 256) * 0x1p-6f, dtype);
        float[] gate = new float[hidden];
        for (int c = 0; c < hidden; c++) {
            gate[c] = random.nextInt(-255, 256) * 0x1p-12f;
        }
        Layer layer = Layer.run(seed, random, x, dtype, gate, hidden, tokens);

        KernelReplays.assertSameBits("seed=" + seed, layer.replay(), layer.cpu(), tokens * hidden);
    }

    @ParameterizedTest
    @CsvSource({"300, 5", "100, 3", "512, 4"})
    void shouldMatchTheCpuPathWithinTheGateDotsRoundingWhenGated(int hidden, int tokens) {
        long seed = 900 + hidden;
        SplittableRandom random = new SplittableRandom(seed);
        ByteBuffer x = bf16Tokens(random, hidden, tokens);
        float[] gate = new float[hidden];
        for (int c = 0; c < hidden; c++) {
            gate[c] = (float) (random.nextGaussian() * 2 / Math.sqrt(hidden));
        }
        Layer layer = Layer.run(seed, random, x, DType.BF16, gate, hidden, tokens);

        float[] xs = KernelReplays.widen(x, tokens * hidden);
        for (int t = 0; t < tokens; t++) {
            double magnitude = 0;
            for (int c = 0; c < hidden; c++) {
                magnitude += Math.abs((double) gate[c] * xs[t * hidden + c]);
            }
            // not bit for bit: both multiply in double (exact) but sum in another order (the
            // kernel's tree, ExpertBank's channels), so the scales part by both double sums'
            // rounding, a quarter of it through the sigmoid, the sigmoids' own rounding, and each
            // cast to float (2⁻²⁵)
            double scaleBound = magnitude * (2 * hidden + 16) * 0x1p-53 / 4 + 0x1p-49 + 0x1p-24;
            for (int c = 0; c < hidden; c++) {
                int i = t * hidden + c;
                float row = layer.rows()[i];
                float before = layer.before()[i];
                // the scale's difference times the row, then half an ulp for each path's
                // multiply and add (|scale·row| ≤ |row|, |out| ≤ |before| + |row|)
                double bound =
                        Math.abs(row) * scaleBound
                                + Math.ulp(row)
                                + Math.ulp(Math.abs(before) + Math.abs(row));
                assertThat(Math.abs((double) layer.replay()[i] - layer.cpu()[i]))
                        .as("seed=%d token=%d channel=%d", seed, t, c)
                        .isLessThanOrEqualTo(bound);
            }
        }
    }

    /**
     * One layer's shared expert on the same inputs both ways. {@code rows} are the CPU MLP's
     * unscaled rows (the ungated expert added to zeros), the replay's {@code shared}.
     */
    private record Layer(float[] rows, float[] before, float[] replay, float[] cpu) {
        static Layer run(
                long seed,
                SplittableRandom random,
                ByteBuffer x,
                DType dtype,
                float @Nullable [] gate,
                int hidden,
                int tokens) {
            int n = tokens * hidden;
            SeededWeights weights = new SeededWeights(seed, 1, hidden, FFN, 1);
            float[] decoded = new float[n];
            dtype.decode(x, 0, decoded, 0, n);
            FloatBuffer xs = Buffers.floats(n).put(0, decoded);
            float[] rows = cpu(weights, null, xs, tokens, new float[n]);
            float[] before = new float[n];
            for (int i = 0; i < n; i++) {
                before[i] = (float) (random.nextGaussian() * 0.5);
            }
            float[] cpu = cpu(weights, gate, xs, tokens, before.clone());
            float[] replay = before.clone();
            KernelReplays.addShared(
                    rows, x, dtype, gate, replay, hidden, tokens, CudaKernels.THREADS);
            return new Layer(rows, before, replay, cpu);
        }

        /**
         * {@code out} plus the shared expert of {@code weights}' expert 0, as a CPU rank adds it.
         */
        private static float[] cpu(
                SeededWeights weights,
                float @Nullable [] gate,
                FloatBuffer x,
                int tokens,
                float[] out) {
            SharedExpert shared = new SharedExpert(weights.expert(0, 0), gate);
            ExpertBank bank =
                    new ExpertBank(new Bf16Weights(weights, shared), Placement.contiguous(1, 1), 0);
            FloatBuffer combined = Buffers.floats(out.length).put(0, out);
            bank.forwardShared(0, x, tokens);
            bank.addShared(combined, tokens);
            combined.get(0, out);
            return out;
        }
    }

    private static ByteBuffer bf16Tokens(SplittableRandom random, int hidden, int tokens) {
        return tokens(tokens * hidden, i -> (float) random.nextGaussian(), DType.BF16);
    }

    private static ByteBuffer tokens(int n, IntToDoubleFunction value, DType dtype) {
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = (float) value.applyAsDouble(i);
        }
        ByteBuffer x =
                ByteBuffer.allocateDirect(n * dtype.sizeBytes()).order(ByteOrder.LITTLE_ENDIAN);
        dtype.encode(values, 0, n, x, 0);
        return x;
    }
}
