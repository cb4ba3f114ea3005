package moe.a2a.experts;

import java.nio.FloatBuffer;
import org.bytedeco.openblas.global.openblas_nolapack;

/**
 * fp32 matrix products through OpenBLAS (JavaCPP presets) on off-heap buffers, which BLAS reads in
 * place. OpenBLAS runs single-threaded: {@link ExpertThreads} shares a product's columns over the
 * cores, and the ranks of one JVM run in parallel on them.
 */
public final class Sgemm {
    static {
        openblas_nolapack.blas_set_num_threads(1);
    }

    private Sgemm() {}

    /** {@code out[m, n] = x[m, k] · w[n, k]ᵀ}, all row-major; buffers start at index 0. */
    public static void xwT(FloatBuffer x, int m, int k, FloatBuffer w, int n, FloatBuffer out) {
        if (m == 0) {
            return;
        }
        openblas_nolapack.cblas_sgemm(
                openblas_nolapack.CblasRowMajor,
                openblas_nolapack.CblasNoTrans,
                openblas_nolapack.CblasTrans,
                m,
                n,
                k,
                1f,
                x,
                k,
                w,
                k,
                0f,
                out,
                n);
    }

    /**
     * Columns {@code n0..n1} of {@code out[m, ·] = x[m, k] · w[n, k]ᵀ}, {@code out}'s rows {@code
     * ldOut} floats apart: one thread's share of a product that several threads split.
     */
    public static void xwT(
            FloatBuffer x,
            int m,
            int k,
            FloatBuffer w,
            int n0,
            int n1,
            FloatBuffer out,
            int ldOut) {
        if (m == 0 || n0 == n1) {
            return;
        }
        openblas_nolapack.cblas_sgemm(
                openblas_nolapack.CblasRowMajor,
                openblas_nolapack.CblasNoTrans,
                openblas_nolapack.CblasTrans,
                m,
                n1 - n0,
                k,
                1f,
                x,
                k,
                w.slice(n0 * k, (n1 - n0) * k),
                k,
                0f,
                out.slice(n0, (m - 1) * ldOut + n1 - n0),
                ldOut);
    }
}
