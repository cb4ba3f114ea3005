package moe.a2a.experts;

import java.nio.FloatBuffer;
import java.util.Arrays;
import java.util.SplittableRandom;
import moe.a2a.kernels.DType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Holds {@link SwiGlu} to the float64 reference layer on the same weights, held in bf16 and in
 * fp32, at row counts that meet every blocking of the kernel's rows, shared over one thread and
 * over several. The hidden size is no multiple of the kernels' blocks, so every reduction has a
 * tail.
 */
class SwiGluTest {
    private static final long SEED = 44;
    private static final int H = 40;
    private static final int I = 72;
    private static final int[] ROWS = {1, 3, 15, 16, 37};

    private final SeededWeights weights = new SeededWeights(SEED, 2, H, I, 1);
    private final ReferenceMoeLayer reference = new ReferenceMoeLayer(weights);

    @ParameterizedTest
    @ValueSource(ints = {1, 3})
    void shouldMatchTheReferenceWhetherHeldInBf16OrFp32(int threads) {
        SwiGlu swiGlu = new SwiGlu(H, new ExpertThreads(threads));
        SplittableRandom random = new SplittableRandom(SEED);
        for (HeldExpert held : new HeldExpert[] {weights.heldExpert(0, 1), weights.expert(0, 1)}) {
            for (int rows : ROWS) {
                float[] x = new float[rows * H];
                for (int i = 0; i < x.length; i++) {
                    x[i] = (float) random.nextDouble(-2, 2);
                }
                FloatBuffer in = Buffers.floats(x.length).put(0, x);
                FloatBuffer out = Buffers.floats(x.length);
                swiGlu.forward(held, in, rows, out);

                int[] ids = new int[rows];
                Arrays.fill(ids, 1);
                float[] ones = new float[rows];
                Arrays.fill(ones, 1f);
                float[] expected = reference.forward(0, x, rows, 1, ids, ones);
                float[] actual = new float[x.length];
                out.get(0, actual);
                LayerCheck.assertClose(
                        held.getClass().getSimpleName() + " rows=" + rows + " threads=" + threads,
                        DType.FP32,
                        actual,
                        expected,
                        H);
            }
        }
    }
}
