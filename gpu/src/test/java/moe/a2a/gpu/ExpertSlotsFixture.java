package moe.a2a.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.IntToLongFunction;

/**
 * A layer's local experts and grouped rows in memory addressed as the device's would be, for
 * replaying the expert GEMMs' argument lists without a GPU: each slot's weights (bf16 as held), the
 * grouped rows ({@code rowsPerSlot[s]} of slot {@code s}, in order, in the math's input type), and
 * the region fp32 GEMMs widen each projection into. Checks outputs against each slot's SwiGLU
 * computed straight from its weights and rows.
 */
final class ExpertSlotsFixture {
    /** Regions of floats, each element {@code bytes} wide at its address. */
    private record Region(long base, int bytes, float[] values) {}

    final int hidden;
    final int ffn;
    final int[] rowsPerSlot;
    final ExpertMath math;
    final long[] w1;
    final long[] w3;
    final long[] w2;
    final long rows;

    /** fp32 GEMMs: where each slot's widened projection sits (its place in one region). */
    final long[] widened;

    private final List<Region> regions = new ArrayList<>();
    private long next = 0x7f00_0000_0000L;

    ExpertSlotsFixture(
            int hidden, int ffn, int[] rowsPerSlot, ExpertMath math, SplittableRandom random) {
        this.hidden = hidden;
        this.ffn = ffn;
        this.rowsPerSlot = rowsPerSlot.clone();
        this.math = math;
        int slots = rowsPerSlot.length;
        w1 = new long[slots];
        w3 = new long[slots];
        w2 = new long[slots];
        for (int s = 0; s < slots; s++) {
            w1[s] = fill(ffn * hidden, Short.BYTES, random);
            w3[s] = fill(ffn * hidden, Short.BYTES, random);
            w2[s] = fill(hidden * ffn, Short.BYTES, random);
        }
        rows = fill(total() * hidden, math.inputBytes(), random);
        long region = allocate(slots * ffn * hidden, Float.BYTES);
        widened = new long[slots];
        for (int s = 0; s < slots; s++) {
            widened[s] = region + (long) s * ffn * hidden * Float.BYTES;
        }
    }

    int total() {
        int total = 0;
        for (int n : rowsPerSlot) {
            total += n;
        }
        return total;
    }

    /** Whether the GEMMs read the weights held (bf16), not the widened region. */
    boolean held() {
        return math == ExpertMath.BF16;
    }

    /** Where a call's A of {@code projection} points: the held weights or the widened region. */
    long[] weights(long[] projection) {
        return held() ? projection : widened;
    }

    /** GpuExperts' widening: each slot's held projection into its place, for fp32 GEMMs. */
    void widen(long[] projection) {
        for (int s = 0; !held() && s < projection.length; s++) {
            float[] w = at(projection[s]);
            System.arraycopy(w, 0, at(widened[0]), s * w.length, w.length);
        }
    }

    long allocate(int elements, int bytes) {
        long base = next;
        regions.add(new Region(base, bytes, new float[elements]));
        next += (long) elements * bytes + 4096;
        return base;
    }

    float[] at(long base) {
        return region(base).values;
    }

    float get(long address) {
        Region r = region(address);
        return r.values[index(r, address)];
    }

    void set(long address, float value) {
        Region r = region(address);
        r.values[index(r, address)] = value;
    }

    /**
     * One GEMM as cuBLAS defines it: {@code C[j + i·m] = Σ A[e + j·k]·B[e + i·k]} for {@code n}
     * columns, A and B of the math's input type, C fp32.
     */
    void gemm(long a, long b, long c, int m, int n, int k) {
        int bytes = math.inputBytes();
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < m; j++) {
                float acc = 0f;
                for (int e = 0; e < k; e++) {
                    acc +=
                            get(a + (long) (e + j * k) * bytes)
                                    * get(b + (long) (e + i * k) * bytes);
                }
                set(c + (long) (j + i * m) * Float.BYTES, acc);
            }
        }
    }

    /**
     * The activation kernel over {@code n} elements of {@code gate} and {@code up} into {@code
     * act}.
     */
    void activate(long gate, long up, long act, int n) {
        for (int i = 0; i < n; i++) {
            set(act + (long) i * math.inputBytes(), silu(get(gate + 4L * i)) * get(up + 4L * i));
        }
    }

    /** Grouped row {@code r}'s output must be its slot's SwiGLU, at {@code out.applyAsLong(r)}. */
    void assertOutputs(IntToLongFunction out) {
        int offset = 0;
        for (int s = 0; s < rowsPerSlot.length; s++) {
            for (int i = 0; i < rowsPerSlot[s]; i++) {
                int row = offset + i;
                float[] x = new float[hidden];
                System.arraycopy(at(rows), row * hidden, x, 0, hidden);
                float[] h = new float[ffn];
                for (int j = 0; j < ffn; j++) {
                    h[j] = silu(dot(at(w1[s]), j * hidden, x)) * dot(at(w3[s]), j * hidden, x);
                }
                long base = out.applyAsLong(row);
                for (int c = 0; c < hidden; c++) {
                    assertThat(get(base + (long) c * Float.BYTES))
                            .as("slot %d row %d channel %d", s, i, c)
                            .isEqualTo(dot(at(w2[s]), c * ffn, h));
                }
            }
            offset += rowsPerSlot[s];
        }
    }

    private long fill(int elements, int bytes, SplittableRandom random) {
        long base = allocate(elements, bytes);
        float[] values = at(base);
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) random.nextDouble(-1, 1);
        }
        return base;
    }

    private static int index(Region r, long address) {
        long offset = address - r.base;
        assertThat(offset % r.bytes).as("address aligned to its element").isZero();
        return (int) (offset / r.bytes);
    }

    private Region region(long address) {
        for (Region r : regions) {
            if (address >= r.base && address < r.base + (long) r.values.length * r.bytes) {
                return r;
            }
        }
        throw new AssertionError("address outside every buffer: 0x" + Long.toHexString(address));
    }

    private static float dot(float[] w, int from, float[] x) {
        float acc = 0f;
        for (int e = 0; e < x.length; e++) {
            acc += w[from + e] * x[e];
        }
        return acc;
    }

    private static float silu(float g) {
        return g / (1f + (float) Math.exp(-g));
    }
}
