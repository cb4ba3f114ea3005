package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cublas.CUBLAS_OP_N;
import static org.bytedeco.cuda.global.cublas.CUBLAS_OP_T;
import static org.bytedeco.cuda.global.cublas.cublasGemmGroupedBatchedEx;
import static org.bytedeco.cuda.global.cudart.CUDA_R_32F;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyAsync;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyHostToDevice;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.bytedeco.cuda.cublas.cublasContext;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;
import org.jspecify.annotations.Nullable;

/**
 * A layer's three expert projections as three {@code cublasGemmGroupedBatchedEx} calls, one GEMM a
 * local expert with rows in each, instead of three calls a slot. In cuBLAS's column-major terms
 * every GEMM is {@code C[m, n] = Wᵀ · B} with {@code W} stored {@code [k, m]} and the rows {@code
 * B} {@code [k, n]}: gate and up ({@code m = ffn, k = hidden}) from the grouped rows, down ({@code
 * m = hidden, k = ffn}) from the activations, into fp32; rows, weights and activations in bf16 or
 * fp32 ({@link ExpertMath}). {@link #plan} lays out the arguments on the host (pure Java, checked
 * without a GPU); {@link #run} copies the pointer lists to the device and enqueues a call. Owned by
 * one thread; its memory belongs to one caller, so a step captured as a CUDA graph replays its own
 * lists.
 */
final class GroupedGemms implements AutoCloseable {
    static final int GATE = 0;
    static final int UP = 1;
    static final int DOWN = 2;

    /**
     * The maths the loaded cuBLAS refused as grouped calls: the process has one cuBLAS, so the
     * first layer's refusal holds for every layer after it.
     */
    private static final Set<ExpertMath> REFUSED = ConcurrentHashMap.newKeySet();

    private final int hidden;
    private final int ffn;
    private final ExpertMath math;
    private final int[] transA;
    private final int[] transB;
    private final int[] n;
    private final int[] groupSize;
    private final int[][] m = new int[3][];
    private final int[][] k = new int[3][];

    /** Per projection: the A, B and C pointers of each group, in that order. */
    private final long[] pointers;

    /** The device side, made by the first {@link #upload}: the pointer lists and the scalars. */
    private @Nullable Device device;

    private int groups;

    /**
     * What {@link #run} hands cuBLAS: the pointer lists on the device; alpha 1, beta 0 and the
     * per-group arrays in host memory. Only the call's {@code IntPointer} overload takes the lists
     * as {@link PointerPointer}s (its {@code int[]} one takes them as output parameters).
     */
    private record Device(
            CudaMemory host,
            CudaMemory lists,
            FloatPointer one,
            FloatPointer zero,
            IntPointer transA,
            IntPointer transB,
            IntPointer n,
            IntPointer groupSize,
            List<IntPointer> m,
            List<IntPointer> k)
            implements AutoCloseable {
        @Override
        public void close() {
            host.close();
            lists.close();
            for (Pointer p : List.of(one, zero, transA, transB, n, groupSize)) {
                p.close();
            }
            m.forEach(Pointer::close);
            k.forEach(Pointer::close);
        }
    }

    /** Whether the loaded cuBLAS refused {@code math}'s grouped calls. */
    static boolean refused(ExpertMath math) {
        return REFUSED.contains(math);
    }

    /** Records that the loaded cuBLAS refused {@code math}'s grouped calls. */
    static void refuse(ExpertMath math) {
        REFUSED.add(math);
    }

    /** Which call this process runs {@code math}'s expert GEMMs with, for a check's report. */
    static String calls(ExpertMath math) {
        return refused(math)
                ? "cublasGemmBatchedEx over padded rows"
                : "cublasGemmGroupedBatchedEx";
    }

    GroupedGemms(int hidden, int ffn, int slots, ExpertMath math) {
        this.hidden = hidden;
        this.ffn = ffn;
        this.math = math;
        this.transA = new int[slots];
        this.transB = new int[slots];
        this.n = new int[slots];
        this.groupSize = new int[slots];
        Arrays.fill(transA, CUBLAS_OP_T);
        Arrays.fill(transB, CUBLAS_OP_N);
        Arrays.fill(groupSize, 1);
        for (int p = GATE; p <= DOWN; p++) {
            m[p] = new int[slots];
            k[p] = new int[slots];
            Arrays.fill(m[p], p == DOWN ? hidden : ffn);
            Arrays.fill(k[p], p == DOWN ? ffn : hidden);
        }
        this.pointers = new long[3 * 3 * slots];
    }

    /**
     * Plans the calls for {@code rowsPerSlot} rows of each slot, in order: slot {@code s}'s weights
     * at {@code w1[s]}, {@code w3[s]}, {@code w2[s]}; its rows, gate, up, activations and outputs
     * from the start of its rows in {@code rows} ({@code [n, H]} in the math's input type), {@code
     * gate} and {@code up} (fp32 {@code [n, F]}), {@code act} ({@code [n, F]}, input type) and
     * {@code out} (fp32 {@code [n, H]}); all device addresses. Slots without rows get no GEMM.
     * Returns the GEMMs a call holds.
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
        int slots = n.length;
        int inputBytes = math.inputBytes();
        groups = 0;
        long offset = 0;
        for (int s = 0; s < rowsPerSlot.length; s++) {
            int rowsOfSlot = rowsPerSlot[s];
            if (rowsOfSlot > 0) {
                int g = groups++;
                n[g] = rowsOfSlot;
                long x = rows + offset * hidden * inputBytes;
                set(GATE, g, w1[s], x, gate + offset * ffn * Float.BYTES, slots);
                set(UP, g, w3[s], x, up + offset * ffn * Float.BYTES, slots);
                set(
                        DOWN,
                        g,
                        w2[s],
                        act + offset * ffn * inputBytes,
                        out + offset * hidden * Float.BYTES,
                        slots);
                offset += rowsOfSlot;
            }
        }
        return groups;
    }

    private void set(int projection, int group, long a, long b, long c, int slots) {
        int at = 3 * slots * projection;
        pointers[at + group] = a;
        pointers[at + slots + group] = b;
        pointers[at + 2 * slots + group] = c;
    }

    /** GEMMs of the planned calls. */
    int groups() {
        return groups;
    }

    /** Rows of group {@code g}: its GEMM's {@code n}. */
    int rows(int g) {
        return n[g];
    }

    /** {@code m} of {@code projection}'s GEMMs (and its C's leading dimension). */
    int m(int projection) {
        return m[projection][0];
    }

    /** {@code k} of {@code projection}'s GEMMs (and the leading dimension of its A and B). */
    int k(int projection) {
        return k[projection][0];
    }

    /** The A, B or C ({@code operand} 0, 1, 2) address of group {@code g} of {@code projection}. */
    long pointer(int projection, int operand, int g) {
        return pointers[3 * n.length * projection + operand * n.length + g];
    }

    /** Copies the planned pointer lists to the device, in order on {@code stream}. */
    void upload(CUstream_st stream) {
        long bytes = Math.max(1, (long) pointers.length * Long.BYTES);
        Device d = device;
        if (d == null) {
            float[] ones = new float[Math.max(1, n.length)];
            Arrays.fill(ones, 1f);
            CudaMemory host = CudaMemory.pinnedHost().ensure(bytes);
            CudaMemory lists;
            try {
                lists = CudaMemory.device().ensure(bytes);
            } catch (RuntimeException e) {
                host.close();
                throw e;
            }
            d =
                    new Device(
                            host,
                            lists,
                            new FloatPointer(ones),
                            new FloatPointer(new float[Math.max(1, n.length)]),
                            new IntPointer(transA),
                            new IntPointer(transB),
                            new IntPointer(Math.max(1, n.length)),
                            new IntPointer(groupSize),
                            Arrays.stream(m).map(IntPointer::new).toList(),
                            Arrays.stream(k).map(IntPointer::new).toList());
            device = d;
        }
        d.n().put(n);
        ByteBuffer host = d.host().hostView();
        for (int i = 0; i < pointers.length; i++) {
            host.putLong(i * Long.BYTES, pointers[i]);
        }
        CudaCheck.check(
                cudaMemcpyAsync(
                        d.lists().at(0), d.host().at(0), bytes, cudaMemcpyHostToDevice, stream),
                "cudaMemcpyAsync(grouped GEMM pointers)");
    }

    /** Enqueues {@code projection}'s call, after {@link #upload}; returns cuBLAS's status. */
    int run(cublasContext handle, int projection) {
        Device d = device;
        if (d == null) {
            throw new IllegalStateException("grouped GEMMs run before their upload");
        }
        int slots = n.length;
        int at = 3 * slots * projection;
        PointerPointer<Pointer> a = d.lists().pointersAt((long) at * Long.BYTES);
        PointerPointer<Pointer> b = d.lists().pointersAt((long) (at + slots) * Long.BYTES);
        PointerPointer<Pointer> c = d.lists().pointersAt((long) (at + 2 * slots) * Long.BYTES);
        IntPointer mOf = d.m().get(projection);
        IntPointer kOf = d.k().get(projection);
        return cublasGemmGroupedBatchedEx(
                handle,
                d.transA(),
                d.transB(),
                mOf,
                d.n(),
                kOf,
                d.one(),
                a,
                math.inputType,
                kOf,
                b,
                math.inputType,
                kOf,
                d.zero(),
                c,
                CUDA_R_32F,
                mOf,
                groups,
                d.groupSize(),
                math.computeType);
    }

    @Override
    public void close() {
        if (device != null) {
            device.close();
            device = null;
        }
    }
}
