package moe.a2a.experts;

import static org.assertj.core.api.Assertions.assertThat;

import moe.a2a.kernels.DType;

/** Compares a served layer output with the reference, with the tolerance its dtype allows. */
public final class LayerCheck {
    private LayerCheck() {}

    /**
     * FP32: within 1e-5 of the row's largest magnitude. BF16/FP16: two units in the last place of
     * that magnitude (2^-6 for bf16, 2^-9 for fp16), since the output rounding may land on the
     * neighbouring value and each rank's partial sum is rounded once before it travels back.
     */
    public static void assertClose(
            String where, DType dtype, float[] actual, float[] expected, int hidden) {
        assertThat(actual).as(where).hasSameSizeAs(expected);
        double relative = dtype == DType.FP32 ? 1e-5 : dtype == DType.BF16 ? 0x1p-6 : 0x1p-9;
        for (int t = 0; t < expected.length / hidden; t++) {
            double rowMax = 0;
            for (int c = 0; c < hidden; c++) {
                rowMax = Math.max(rowMax, Math.abs(expected[t * hidden + c]));
            }
            for (int c = 0; c < hidden; c++) {
                int i = t * hidden + c;
                double tolerance = relative * rowMax + 1e-7;
                assertThat((double) actual[i])
                        .as("%s token=%d col=%d", where, t, c)
                        .isCloseTo(expected[i], org.assertj.core.data.Offset.offset(tolerance));
            }
        }
    }
}
