package moe.a2a.experts;

import java.nio.FloatBuffer;
import org.bytedeco.openblas.global.openblas_nolapack;

/**
 * fp32 matrix products through OpenBLAS (JavaCPP presets) on off-heap buffers, which BLAS reads in
 * place. OpenBLAS runs single-threaded: the ranks of one JVM already run in parallel on the cores.
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
}
