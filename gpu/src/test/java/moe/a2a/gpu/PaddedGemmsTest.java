package moe.a2a.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The padded batched GEMMs' argument and index lists checked without a GPU, as {@link
 * GroupedGemmsTest} checks the grouped ones: the pad (a gather of the grouped rows into slots of
 * the fullest slot's height), the three batched calls as cuBLAS defines them (every GEMM of the
 * batch {@code n} = that height), the activation over the padded rows and the gather back must give
 * each grouped row its slot's SwiGLU, whatever the pads computed.
 */
class PaddedGemmsTest {
    private static final int HIDDEN = 24;
    private static final int FFN = 40;
    private static final int[] ROWS_PER_SLOT = {3, 0, 7, 1, 0, 2};

    @ParameterizedTest
    @EnumSource(ExpertMath.class)
    void shouldComputeEverySlotsSwiGluThroughThePaddedLayout(ExpertMath math) {
        ExpertSlotsFixture f =
                new ExpertSlotsFixture(HIDDEN, FFN, ROWS_PER_SLOT, math, new SplittableRandom(5));
        int padded = (int) PaddedGemms.paddedRows(ROWS_PER_SLOT);
        assertThat(padded).as("4 slots with rows, 7 rows each").isEqualTo(28);
        int bytes = math.inputBytes();
        long paddedRows = f.allocate(padded * HIDDEN, bytes);
        long gate = f.allocate(padded * FFN, Float.BYTES);
        long up = f.allocate(padded * FFN, Float.BYTES);
        long act = f.allocate(padded * FFN, bytes);
        long paddedOut = f.allocate(padded * HIDDEN, Float.BYTES);
        long out = f.allocate(f.total() * HIDDEN, Float.BYTES);

        PaddedGemms calls = new PaddedGemms(HIDDEN, FFN, ROWS_PER_SLOT.length, math);
        int batch =
                calls.plan(
                        ROWS_PER_SLOT,
                        f.weights(f.w1),
                        f.weights(f.w3),
                        f.weights(f.w2),
                        paddedRows,
                        gate,
                        up,
                        act,
                        paddedOut);
        assertThat(batch).as("one GEMM a slot with rows").isEqualTo(4);
        assertThat(calls.rows()).isEqualTo(7);
        // gather_rows into the padded layout
        for (int p = 0; p < calls.padded(); p++) {
            System.arraycopy(
                    f.at(f.rows), calls.padIndex(p) * HIDDEN, f.at(paddedRows), p * HIDDEN, HIDDEN);
        }
        f.widen(f.w1);
        replay(calls, GroupedGemms.GATE, f);
        f.widen(f.w3);
        replay(calls, GroupedGemms.UP, f);
        f.activate(gate, up, act, padded * FFN);
        f.widen(f.w2);
        replay(calls, GroupedGemms.DOWN, f);
        // gather_rows back into the grouped order
        for (int r = 0; r < f.total(); r++) {
            System.arraycopy(
                    f.at(paddedOut), calls.unpadIndex(r) * HIDDEN, f.at(out), r * HIDDEN, HIDDEN);
        }

        f.assertOutputs(row -> out + (long) row * HIDDEN * Float.BYTES);
    }

    /** One batched call: every GEMM of the batch with the same {@code n}. */
    private static void replay(PaddedGemms calls, int projection, ExpertSlotsFixture f) {
        for (int b = 0; b < calls.batch(); b++) {
            f.gemm(
                    calls.pointer(projection, 0, b),
                    calls.pointer(projection, 1, b),
                    calls.pointer(projection, 2, b),
                    calls.m(projection),
                    calls.rows(),
                    calls.k(projection));
        }
    }
}
