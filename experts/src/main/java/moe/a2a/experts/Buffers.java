package moe.a2a.experts;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;

/** Off-heap fp32 buffers in native order, the form BLAS reads without copying. */
public final class Buffers {
    private Buffers() {}

    public static FloatBuffer floats(long count) {
        if (count * Float.BYTES > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("buffer too large: floats=" + count);
        }
        return ByteBuffer.allocateDirect((int) Math.max(1, count) * Float.BYTES)
                .order(ByteOrder.nativeOrder())
                .asFloatBuffer()
                .limit((int) count)
                .slice();
    }

    /** {@code buffer} when it holds at least {@code count} floats, else a larger one. */
    public static FloatBuffer ensure(FloatBuffer buffer, long count) {
        return buffer.capacity() >= count
                ? buffer
                : floats(Math.max(count, buffer.capacity() * 3L / 2));
    }
}
