package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cublas.CUBLAS_GEMM_DEFAULT;
import static org.bytedeco.cuda.global.cublas.CUBLAS_OP_N;
import static org.bytedeco.cuda.global.cublas.CUBLAS_OP_T;
import static org.bytedeco.cuda.global.cublas.cublasGemmBatchedEx;
import static org.bytedeco.cuda.global.cudart.CUDA_R_32F;

import org.bytedeco.cuda.cublas.cublasContext;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.FloatPointer;

/**
 * A layer's three expert projections as three {@code cublasGemmBatchedEx} calls, for a cuBLAS whose
 * grouped call does not take these types: every slot with rows is one GEMM of the batch, its rows
 * padded to the most any slot has (a batched call has one {@code n}). The grouped rows are gathered
 * into that padded layout first (a pad repeats its slot's first row, and its outputs are never
 * read) and the outputs gathered back after. The weights stay where they are, one allocation an
 * expert (shared across placements), so the batch takes pointer lists rather than strides. In
 * cuBLAS's column-major terms every GEMM is {@code C[m, n] = Wᵀ · B}, as {@link GroupedGemms}'.
 * {@link #plan} lays out the arguments on the host (pure Java, checked without a GPU). Owned by one
 * thread; its memory belongs to one caller.
 */
final class PaddedGemms implements AutoCloseable {
    private final int hidden;
    private final int ffn;
    private final ExpertMath math;
    private final int slots;

    /** Per projection: the A, B and C pointers of each GEMM of the batch, in that order. */
    private final long[] pointers;

    private final IndexUpload device = new IndexUpload();
    private final FloatPointer one = new FloatPointer(1).put(1f);
    private final FloatPointer zero = new FloatPointer(1).put(0f);
    private int[] padIndex = new int[0];
    private int[] unpadIndex = new int[0];
    private int batch;
    private int padded;
    private int total;
    private long pointersAt;
    private long padAt;
    private long unpadAt;

    PaddedGemms(int hidden, int ffn, int slots, ExpertMath math) {
        this.hidden = hidden;
        this.ffn = ffn;
        this.slots = slots;
        this.math = math;
        this.pointers = new long[3 * 3 * slots];
    }

    /**
     * Rows of the padded layout for {@code rowsPerSlot}: slots with rows times the most any has.
     */
    static long paddedRows(int[] rowsPerSlot) {
        int most = 0;
        int withRows = 0;
        for (int n : rowsPerSlot) {
            most = Math.max(most, n);
            withRows += n > 0 ? 1 : 0;
        }
        return (long) most * withRows;
    }

    /**
     * Plans the calls for {@code rowsPerSlot} rows of each slot: slot {@code s}'s weights at {@code
     * w1[s]}, {@code w3[s]}, {@code w2[s]}; the padded rows ({@code [P, H]}, the math's input
     * type), gate and up (fp32 {@code [P, F]}), activations ({@code [P, F]}, input type) and
     * outputs (fp32 {@code [P, H]}), {@code P} = {@link #paddedRows}; all device addresses. Returns
     * the GEMMs of the batch.
     */
    int plan(
            int[] rowsPerSlot,
            long[] w1,
            long[] w3,
            long[] w2,
            long rows,
            long gate,
            long up,
            long act,
            long out) {
        int most = 0;
        total = 0;
        for (int n : rowsPerSlot) {
            most = Math.max(most, n);
            total += n;
        }
        padded = (int) paddedRows(rowsPerSlot);
        if (padIndex.length < padded) {
            padIndex = new int[padded];
        }
        if (unpadIndex.length < total) {
            unpadIndex = new int[total];
        }
        int bytes = math.inputBytes();
        batch = 0;
        int offset = 0;
        for (int s = 0; s < rowsPerSlot.length; s++) {
            int n = rowsPerSlot[s];
            if (n == 0) {
                continue;
            }
            int b = batch++;
            long first = (long) b * most;
            for (int i = 0; i < most; i++) {
                padIndex[(int) first + i] = offset + (i < n ? i : 0);
            }
            for (int i = 0; i < n; i++) {
                unpadIndex[offset + i] = (int) first + i;
            }
            set(
                    GroupedGemms.GATE,
                    b,
                    w1[s],
                    rows + first * hidden * bytes,
                    gate + first * ffn * Float.BYTES);
            set(
                    GroupedGemms.UP,
                    b,
                    w3[s],
                    rows + first * hidden * bytes,
                    up + first * ffn * Float.BYTES);
            set(
                    GroupedGemms.DOWN,
                    b,
                    w2[s],
                    act + first * ffn * bytes,
                    out + first * hidden * Float.BYTES);
            offset += n;
        }
        return batch;
    }

    private void set(int projection, int b, long a, long x, long c) {
        int at = 3 * slots * projection;
        pointers[at + b] = a;
        pointers[at + slots + b] = x;
        pointers[at + 2 * slots + b] = c;
    }

    /** GEMMs of the planned batch. */
    int batch() {
        return batch;
    }

    /** Rows of each GEMM of the planned batch: its {@code n}. */
    int rows() {
        return batch == 0 ? 0 : padded / batch;
    }

    /** Rows of the padded layout. */
    int padded() {
        return padded;
    }

    /** Padded row {@code p}'s grouped row. */
    int padIndex(int p) {
        return padIndex[p];
    }

    /** Grouped row {@code r}'s padded row. */
    int unpadIndex(int r) {
        return unpadIndex[r];
    }

    /** {@code m} of {@code projection}'s GEMMs (and its C's leading dimension). */
    int m(int projection) {
        return projection == GroupedGemms.DOWN ? hidden : ffn;
    }

    /** {@code k} of {@code projection}'s GEMMs (and the leading dimension of its A and B). */
    int k(int projection) {
        return projection == GroupedGemms.DOWN ? ffn : hidden;
    }

    /** The A, B or C ({@code operand} 0, 1, 2) address of GEMM {@code b} of {@code projection}. */
    long pointer(int projection, int operand, int b) {
        return pointers[3 * slots * projection + operand * slots + b];
    }

    /** Copies the planned pointer and index lists to the device, in order on {@code stream}. */
    void upload(CUstream_st stream) {
        device.reset(48L + (long) pointers.length * Long.BYTES + 4L * ((long) padded + total));
        pointersAt = device.longs(pointers, pointers.length);
        padAt = device.ints(padIndex, padded);
        unpadAt = device.ints(unpadIndex, total);
        device.upload(stream);
    }

    /** The grouped rows gathered into the padded layout, after {@link #upload}. */
    void pad(CudaKernels kernels, CudaMemory rows, CudaMemory paddedRows, CUstream_st stream) {
        kernels.gatherRows(
                rows.at(0),
                device.at(padAt),
                paddedRows.at(0),
                hidden * math.inputBytes(),
                padded,
                stream);
    }

    /** The padded outputs gathered back into the grouped order, after the batch ran. */
    void unpad(CudaKernels kernels, CudaMemory paddedOut, CudaMemory out, CUstream_st stream) {
        kernels.gatherRows(
                paddedOut.at(0),
                device.at(unpadAt),
                out.at(0),
                hidden * Float.BYTES,
                total,
                stream);
    }

    /** Enqueues {@code projection}'s batch, after {@link #upload}; returns cuBLAS's status. */
    int run(cublasContext handle, int projection) {
        long at = pointersAt + (long) 3 * slots * projection * Long.BYTES;
        int m = m(projection);
        int k = k(projection);
        return cublasGemmBatchedEx(
                handle,
                CUBLAS_OP_T,
                CUBLAS_OP_N,
                m,
                rows(),
                k,
                one,
                device.pointersAt(at),
                math.inputType,
                k,
                device.pointersAt(at + (long) slots * Long.BYTES),
                math.inputType,
                k,
                zero,
                device.pointersAt(at + 2L * slots * Long.BYTES),
                CUDA_R_32F,
                m,
                batch,
                math.computeType,
                CUBLAS_GEMM_DEFAULT);
    }

    @Override
    public void close() {
        device.close();
        one.close();
        zero.close();
    }
}
