package moe.a2a.experts;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.FloatBuffer;
import java.util.List;
import java.util.function.Function;
import moe.a2a.kernels.DType;
import org.jspecify.annotations.Nullable;

/**
 * One SwiGLU expert's weights in bf16 as a checkpoint stores them, off-heap, little-endian and
 * row-major in {@link ExpertWeights}' shapes: {@code w1, w3: [I, H]}, {@code w2: [H, I]}. Half the
 * bytes of fp32, and what the bf16 kernels read. Immutable once built.
 */
public record Bf16Expert(int hidden, int ffn, MemorySegment w1, MemorySegment w3, MemorySegment w2)
        implements HeldExpert {
    public Bf16Expert {
        checkSize("w1", w1, (long) ffn * hidden);
        checkSize("w3", w3, (long) ffn * hidden);
        checkSize("w2", w2, (long) hidden * ffn);
    }

    /**
     * The projections named {@code w1, w3, w2}, copied from the safetensors files that {@code
     * fileOf} finds them in, or null unless all three are stored in bf16.
     */
    public static @Nullable Bf16Expert stored(
            int hidden,
            int ffn,
            Function<String, SafetensorsFile> fileOf,
            String w1,
            String w3,
            String w2) {
        for (String name : List.of(w1, w3, w2)) {
            if (!fileOf.apply(name).require(name).dtypeName().equals("BF16")) {
                return null;
            }
        }
        return new Bf16Expert(hidden, ffn, copy(fileOf, w1), copy(fileOf, w3), copy(fileOf, w2));
    }

    @Override
    public long bytes() {
        return w1.byteSize() + w3.byteSize() + w2.byteSize();
    }

    /** The expert widened to fp32, exactly. */
    public ExpertWeights widened() {
        return new ExpertWeights(hidden, ffn, widen(w1), widen(w3), widen(w2));
    }

    private static MemorySegment copy(Function<String, SafetensorsFile> fileOf, String name) {
        SafetensorsFile file = fileOf.apply(name);
        return file.readStored(file.require(name));
    }

    private static FloatBuffer widen(MemorySegment bf16) {
        FloatBuffer out = Buffers.floats(bf16.byteSize() / 2);
        DType.BF16.decode(bf16, 0, MemorySegment.ofBuffer(out), 0, out.capacity());
        return out;
    }

    private static void checkSize(String name, MemorySegment segment, long elements) {
        if (segment.byteSize() != elements * ValueLayout.JAVA_SHORT.byteSize()) {
            throw new IllegalArgumentException(
                    name
                            + ".size: "
                            + segment.byteSize()
                            + " bytes (expected: "
                            + 2 * elements
                            + ", bf16)");
        }
    }
}
