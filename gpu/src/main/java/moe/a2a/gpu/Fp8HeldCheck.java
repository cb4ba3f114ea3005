package moe.a2a.gpu;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Locale;
import java.util.SplittableRandom;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ExpertWeights;
import moe.a2a.experts.Fp8Expert;
import moe.a2a.experts.Fp8Matrix;
import moe.a2a.experts.WeightSource;
import moe.a2a.kernels.DType;
import org.bytedeco.cuda.cudart.CUstream_st;

/**
 * {@link GpuCheck}'s experts held in FP8 ({@link GpuExperts#heldInFp8}) against the same experts
 * held in bf16: {@code fp8_weights} must give each GEMM the very weights the bf16 copy holds, so
 * the outputs must be the same bits, for bf16 rows and for fp32 rows; and the FP8 copy must take
 * less than 53 % of the bf16 one's memory (codes a byte, plus a scale a 128 × 128 tile).
 */
final class Fp8HeldCheck {
    private static final int EXPERTS = 8;
    private static final int HIDDEN = 512;
    private static final int FFN = 1024;
    private static final int BLOCK = 128;
    private static final int ROWS = 96;

    private Fp8HeldCheck() {}

    static void run(CudaKernels kernels, CUstream_st stream, CheckTable table) {
        WeightSource source = new SeededFp8(11);
        Placement placement = Placement.contiguous(EXPERTS, 1);
        SplittableRandom random = new SplittableRandom(12);
        int[] rowsPerSlot = new int[EXPERTS];
        for (int r = 0; r < ROWS; r++) {
            rowsPerSlot[random.nextInt(EXPERTS - 1)]++;
        }
        float[] x = new float[ROWS * HIDDEN];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) random.nextDouble(-1, 1);
        }
        try (GpuExperts bf16 = new GpuExperts(source, 0, placement, 0, false, kernels);
                GpuExperts fp8 = GpuExperts.heldInFp8(source, 0, placement, 0, false, kernels)) {
            for (DType dtype : new DType[] {DType.BF16, DType.FP32}) {
                byte[] held = forward(bf16, x, dtype, rowsPerSlot, stream);
                byte[] made = forward(fp8, x, dtype, rowsPerSlot, stream);
                table.row(
                        "experts held in FP8 vs in bf16, " + dtype + " rows",
                        Arrays.equals(held, made)
                                ? "bit-exact (" + ROWS + " rows, the last slot empty)"
                                : "outputs differ",
                        Arrays.equals(held, made));
            }
            double ratio = (double) fp8.bytesPerExpert() / bf16.bytesPerExpert();
            table.row(
                    "experts held in FP8, device memory an expert",
                    String.format(
                            Locale.ROOT,
                            "%d B, %.3f of bf16's %d B",
                            fp8.bytesPerExpert(),
                            ratio,
                            bf16.bytesPerExpert()),
                    ratio < 0.53);
        }
    }

    /** {@code experts}' fp32 outputs for {@code x} as rows in {@code dtype}, as bytes. */
    private static byte[] forward(
            GpuExperts experts, float[] x, DType dtype, int[] rowsPerSlot, CUstream_st stream) {
        ByteBuffer rows =
                ByteBuffer.allocateDirect(x.length * dtype.sizeBytes())
                        .order(ByteOrder.LITTLE_ENDIAN);
        dtype.encode(x, 0, x.length, rows, 0);
        try (CudaMemory deviceRows = GpuCpuComparison.upload(rows);
                CudaMemory out = CudaMemory.device().ensure((long) ROWS * HIDDEN * Float.BYTES);
                GpuExperts.Scratch scratch = new GpuExperts.Scratch()) {
            experts.forward(deviceRows, dtype, rowsPerSlot, out, stream, scratch);
            GpuCpuComparison.sync(stream);
            ByteBuffer host = GpuCpuComparison.download(out, (long) ROWS * HIDDEN * Float.BYTES);
            byte[] bytes = new byte[ROWS * HIDDEN * Float.BYTES];
            host.get(0, bytes);
            return bytes;
        }
    }

    /**
     * One layer of seeded FP8 experts, as a checkpoint would store them: codes over every finite
     * E4M3 value, one scale a tile; {@link #expert} gives them dequantized, as the CPU path reads
     * an FP8 checkpoint.
     */
    private static final class SeededFp8 extends OneLayerWeights {
        private final long seed;

        SeededFp8(long seed) {
            super(EXPERTS, HIDDEN, FFN, "seeded FP8 experts");
            this.seed = seed;
        }

        @Override
        public Fp8Expert fp8Expert(int layer, int expert) {
            SplittableRandom random = new SplittableRandom(seed * 1000 + expert);
            return new Fp8Expert(
                    HIDDEN,
                    FFN,
                    matrix(random, FFN, HIDDEN),
                    matrix(random, FFN, HIDDEN),
                    matrix(random, HIDDEN, FFN));
        }

        private static Fp8Matrix matrix(SplittableRandom random, int rows, int cols) {
            ByteBuffer codes = ByteBuffer.allocateDirect(rows * cols);
            for (int i = 0; i < rows * cols; i++) {
                int b;
                do {
                    b = random.nextInt(256);
                } while ((b & 0x7F) == 0x7F);
                codes.put(i, (byte) b);
            }
            float[] scales = new float[Math.ceilDiv(rows, BLOCK) * Math.ceilDiv(cols, BLOCK)];
            for (int i = 0; i < scales.length; i++) {
                scales[i] = (float) random.nextDouble(1e-4, 1e-3);
            }
            return new Fp8Matrix(codes, scales, rows, cols, BLOCK);
        }

        @Override
        public ExpertWeights expert(int layer, int expert) {
            return fp8Expert(layer, expert).dequantized();
        }
    }
}
