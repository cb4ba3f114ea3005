package moe.a2a.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The grouped GEMMs' argument lists checked without a GPU: the three calls {@link GroupedGemms}
 * plans are replayed as cuBLAS defines them (column-major, {@code C = Aᵀ·B}, leading dimensions
 * {@code lda}, {@code ldb}, {@code ldc}) on memory addressed as the device's would be ({@link
 * ExpertSlotsFixture}), and the outputs must equal each slot's SwiGLU computed straight from its
 * weights and rows. bf16 GEMMs read the weights held; fp32 ones (fp16 and fp32 steps) read each
 * projection from one widened region a slot, rewritten before each call, as {@link GpuExperts}
 * does.
 */
class GroupedGemmsTest {
    private static final int HIDDEN = 24;
    private static final int FFN = 40;
    private static final int[] ROWS_PER_SLOT = {3, 0, 7, 1, 0, 2};

    @ParameterizedTest
    @EnumSource(ExpertMath.class)
    void shouldComputeEverySlotsSwiGluAsThePerSlotLoopDid(ExpertMath math) {
        ExpertSlotsFixture f =
                new ExpertSlotsFixture(HIDDEN, FFN, ROWS_PER_SLOT, math, new SplittableRandom(3));
        int total = f.total();
        long gate = f.allocate(total * FFN, Float.BYTES);
        long up = f.allocate(total * FFN, Float.BYTES);
        long act = f.allocate(total * FFN, math.inputBytes());
        long out = f.allocate(total * HIDDEN, Float.BYTES);

        GroupedGemms calls = new GroupedGemms(HIDDEN, FFN, ROWS_PER_SLOT.length, math);
        int groups =
                calls.plan(
                        ROWS_PER_SLOT,
                        f.weights(f.w1),
                        f.weights(f.w3),
                        f.weights(f.w2),
                        f.rows,
                        gate,
                        up,
                        act,
                        out);
        assertThat(groups).as("one GEMM a slot with rows").isEqualTo(4);
        f.widen(f.w1);
        replay(calls, GroupedGemms.GATE, f);
        f.widen(f.w3);
        replay(calls, GroupedGemms.UP, f);
        f.activate(gate, up, act, total * FFN);
        f.widen(f.w2);
        replay(calls, GroupedGemms.DOWN, f);

        f.assertOutputs(row -> out + (long) row * HIDDEN * Float.BYTES);
    }

    /** One grouped call: each group's GEMM, {@code n} its rows. */
    private static void replay(GroupedGemms calls, int projection, ExpertSlotsFixture f) {
        for (int g = 0; g < calls.groups(); g++) {
            f.gemm(
                    calls.pointer(projection, 0, g),
                    calls.pointer(projection, 1, g),
                    calls.pointer(projection, 2, g),
                    calls.m(projection),
                    calls.rows(g),
                    calls.k(projection));
        }
    }
}
