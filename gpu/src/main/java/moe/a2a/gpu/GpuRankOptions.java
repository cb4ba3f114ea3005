package moe.a2a.gpu;

/**
 * How a GPU rank computes and holds its experts.
 *
 * @param tf32 whether the fp32 GEMMs (fp16 and fp32 steps) may run on TF32 tensor cores; fp32 math
 *     otherwise
 * @param fp8Experts whether to hold an FP8 checkpoint's experts as stored (half the memory of bf16;
 *     each projection made bf16-rounded weights in scratch before its GEMM, every step) even when
 *     bf16 fits; without it they are held in FP8 only when bf16 does not fit
 */
public record GpuRankOptions(boolean tf32, boolean fp8Experts) {
    /** fp32 math; experts in bf16 where they fit. */
    public static final GpuRankOptions DEFAULT = new GpuRankOptions(false, false);
}
