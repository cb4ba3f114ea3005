package moe.a2a.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The grouped GEMMs' argument lists checked without a GPU: the three calls {@link GroupedGemms}
 * plans are replayed as cuBLAS defines them (column-major, {@code C = Aᵀ·B}, leading dimensions
 * {@code lda}, {@code ldb}, {@code ldc}) on memory addressed as the device's would be, and the
 * outputs must equal each slot's SwiGLU computed straight from its weights and rows.
 */
class GroupedGemmsTest {
    private static final int HIDDEN = 24;
    private static final int FFN = 40;
    private static final int[] ROWS_PER_SLOT = {3, 0, 7, 1, 0, 2};

    /** Device memory as addresses: regions of floats, each element {@code bytes} wide. */
    private static final class Memory {
        private record Region(long base, int bytes, float[] values) {}

        private final List<Region> regions = new ArrayList<>();
        private long next = 0x7f00_0000_0000L;

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
            throw new AssertionError(
                    "address outside every buffer: 0x" + Long.toHexString(address));
        }
    }

    /**
     * bf16 GEMMs read the weights held; fp32 ones (fp16 and fp32 steps) read each projection from
     * one widened region a slot, rewritten before each call, as {@link GpuExperts} does.
     */
    @ParameterizedTest
    @EnumSource(ExpertMath.class)
    void shouldComputeEverySlotsSwiGluAsThePerSlotLoopDid(ExpertMath math) {
        SplittableRandom random = new SplittableRandom(3);
        int slots = ROWS_PER_SLOT.length;
        int total = 0;
        for (int n : ROWS_PER_SLOT) {
            total += n;
        }
        Memory memory = new Memory();
        long[] w1 = new long[slots];
        long[] w3 = new long[slots];
        long[] w2 = new long[slots];
        for (int s = 0; s < slots; s++) {
            w1[s] = fill(memory, FFN * HIDDEN, Short.BYTES, random);
            w3[s] = fill(memory, FFN * HIDDEN, Short.BYTES, random);
            w2[s] = fill(memory, HIDDEN * FFN, Short.BYTES, random);
        }
        int bytes = math.inputBytes();
        long rows = fill(memory, total * HIDDEN, bytes, random);
        long gate = memory.allocate(total * FFN, Float.BYTES);
        long up = memory.allocate(total * FFN, Float.BYTES);
        long act = memory.allocate(total * FFN, bytes);
        long out = memory.allocate(total * HIDDEN, Float.BYTES);
        boolean held = math == ExpertMath.BF16;
        long widened = memory.allocate(slots * FFN * HIDDEN, Float.BYTES);
        long[] widenedAt = new long[slots];
        for (int s = 0; s < slots; s++) {
            widenedAt[s] = widened + (long) s * FFN * HIDDEN * Float.BYTES;
        }

        GroupedGemms calls = new GroupedGemms(HIDDEN, FFN, slots, math);
        int groups =
                calls.plan(
                        ROWS_PER_SLOT,
                        held ? w1 : widenedAt,
                        held ? w3 : widenedAt,
                        held ? w2 : widenedAt,
                        rows,
                        gate,
                        up,
                        act,
                        out);
        assertThat(groups).as("one GEMM a slot with rows").isEqualTo(4);
        widen(held, w1, memory, widened);
        replay(calls, GroupedGemms.GATE, bytes, memory);
        widen(held, w3, memory, widened);
        replay(calls, GroupedGemms.UP, bytes, memory);
        float[] g = memory.at(gate);
        float[] u = memory.at(up);
        float[] a = memory.at(act);
        for (int i = 0; i < a.length; i++) {
            a[i] = silu(g[i]) * u[i];
        }
        widen(held, w2, memory, widened);
        replay(calls, GroupedGemms.DOWN, bytes, memory);

        int offset = 0;
        for (int s = 0; s < slots; s++) {
            for (int i = 0; i < ROWS_PER_SLOT[s]; i++) {
                int row = offset + i;
                float[] x = slice(memory.at(rows), row * HIDDEN, HIDDEN);
                float[] h = new float[FFN];
                for (int j = 0; j < FFN; j++) {
                    h[j] =
                            silu(dot(memory.at(w1[s]), j * HIDDEN, x))
                                    * dot(memory.at(w3[s]), j * HIDDEN, x);
                }
                for (int c = 0; c < HIDDEN; c++) {
                    assertThat(memory.at(out)[row * HIDDEN + c])
                            .as("slot %d row %d channel %d", s, i, c)
                            .isEqualTo(dot(memory.at(w2[s]), c * FFN, h));
                }
            }
            offset += ROWS_PER_SLOT[s];
        }
    }

    /** GpuExperts.widen: each slot's held projection into its place in the widened region. */
    private static void widen(boolean held, long[] projection, Memory memory, long widened) {
        for (int s = 0; !held && s < projection.length; s++) {
            float[] w = memory.at(projection[s]);
            System.arraycopy(w, 0, memory.at(widened), s * w.length, w.length);
        }
    }

    /**
     * One grouped call as cuBLAS defines it: for each GEMM, C[j + i·ldc] = Σ A[c + j·lda]·B[c +
     * i·ldb], A and B of {@code bytes} an element.
     */
    private static void replay(GroupedGemms calls, int projection, int bytes, Memory memory) {
        int m = calls.m(projection);
        int k = calls.k(projection);
        for (int g = 0; g < calls.groups(); g++) {
            long a = calls.pointer(projection, 0, g);
            long b = calls.pointer(projection, 1, g);
            long c = calls.pointer(projection, 2, g);
            for (int i = 0; i < calls.rows(g); i++) {
                for (int j = 0; j < m; j++) {
                    float acc = 0f;
                    for (int e = 0; e < k; e++) {
                        acc +=
                                memory.get(a + (long) (e + j * k) * bytes)
                                        * memory.get(b + (long) (e + i * k) * bytes);
                    }
                    memory.set(c + (long) (j + i * m) * Float.BYTES, acc);
                }
            }
        }
    }

    private static long fill(Memory memory, int elements, int bytes, SplittableRandom random) {
        long base = memory.allocate(elements, bytes);
        float[] values = memory.at(base);
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) random.nextDouble(-1, 1);
        }
        return base;
    }

    private static float dot(float[] w, int from, float[] x) {
        float acc = 0f;
        for (int e = 0; e < x.length; e++) {
            acc += w[from + e] * x[e];
        }
        return acc;
    }

    private static float[] slice(float[] values, int from, int length) {
        float[] out = new float[length];
        System.arraycopy(values, from, out, 0, length);
        return out;
    }

    private static float silu(float g) {
        return g / (1f + (float) Math.exp(-g));
    }
}
