package moe.a2a.client;

import com.google.protobuf.ByteString;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import moe.a2a.v1.DType;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.Tensor;
import moe.a2a.v1.TopK;
import org.jspecify.annotations.Nullable;

/**
 * The wire's tensors ({@code [rows, cols]}, row-major, little-endian) from and to Java arrays, and
 * the bf16 conversions. Stateless.
 */
public final class Tensors {
    private Tensors() {}

    /** An FP32 tensor of {@code values}. */
    public static Tensor fp32(float[] values, int rows, int cols) {
        check(values.length, rows, cols);
        ByteBuffer b = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(values);
        return of(DType.FP32, b, rows, cols);
    }

    /** A BF16 tensor of bf16 bit patterns ({@link #toBf16} makes them from floats). */
    public static Tensor bf16(short[] bits, int rows, int cols) {
        return sixteen(DType.BF16, bits, rows, cols);
    }

    /** An FP16 tensor of IEEE half-precision bit patterns ({@link Float#floatToFloat16}). */
    public static Tensor fp16(short[] bits, int rows, int cols) {
        return sixteen(DType.FP16, bits, rows, cols);
    }

    /**
     * A tensor of {@code dtype} whose elements are {@code data}'s remaining bytes, little-endian.
     */
    public static Tensor of(DType dtype, ByteBuffer data, int rows, int cols) {
        int size = dtype == DType.FP32 ? 4 : 2;
        if (data.remaining() != (long) rows * cols * size) {
            throw new IllegalArgumentException(
                    "data: "
                            + data.remaining()
                            + " bytes (expected: "
                            + rows
                            + " x "
                            + cols
                            + " x "
                            + size
                            + ")");
        }
        return Tensor.newBuilder()
                .setDtype(dtype)
                .addShape(rows)
                .addShape(cols)
                .setData(ByteString.copyFrom(data.duplicate()))
                .build();
    }

    /** Routing chosen by the caller: {@code [T, k]} expert ids and weights, row-major. */
    public static TopK topK(int[] ids, float[] weights, int k) {
        if (ids.length != weights.length || k <= 0 || ids.length % k != 0) {
            throw new IllegalArgumentException(
                    "topk: "
                            + ids.length
                            + " ids, "
                            + weights.length
                            + " weights, k "
                            + k
                            + " (expected: as many of each, a multiple of k > 0)");
        }
        TopK.Builder b = TopK.newBuilder().setK(k);
        for (int i = 0; i < ids.length; i++) {
            b.addExpertIds(ids[i]).addWeights(weights[i]);
        }
        return b.build();
    }

    /**
     * A Forward request: layer, {@code [T, H]} hidden states, and their routing or null (the gate).
     */
    public static ForwardRequest request(int layer, Tensor hiddenStates, @Nullable TopK topK) {
        ForwardRequest.Builder b =
                ForwardRequest.newBuilder().setLayer(layer).setHiddenStates(hiddenStates);
        if (topK != null) {
            b.setTopk(topK);
        }
        return b.build();
    }

    /** A tensor's elements as floats, whatever its dtype. */
    public static float[] floats(Tensor t) {
        ByteBuffer b = t.getData().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
        return switch (t.getDtype()) {
            case FP32 -> {
                float[] out = new float[b.remaining() / 4];
                b.asFloatBuffer().get(out);
                yield out;
            }
            case BF16, FP16 -> {
                float[] out = new float[b.remaining() / 2];
                for (int i = 0; i < out.length; i++) {
                    short bits = b.getShort(2 * i);
                    out[i] =
                            t.getDtype() == DType.BF16
                                    ? fromBf16(bits)
                                    : Float.float16ToFloat(bits);
                }
                yield out;
            }
            default ->
                    throw new IllegalArgumentException(
                            "dtype: " + t.getDtype() + " (expected: FP32, FP16 or BF16)");
        };
    }

    /** The bf16 bit pattern nearest {@code value} (ties to even; NaN stays NaN). */
    public static short toBf16(float value) {
        int bits = Float.floatToRawIntBits(value);
        if (Float.isNaN(value)) {
            return (short) ((bits >>> 16) | 0x40);
        }
        return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
    }

    /** The value of a bf16 bit pattern. */
    public static float fromBf16(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    private static Tensor sixteen(DType dtype, short[] bits, int rows, int cols) {
        check(bits.length, rows, cols);
        ByteBuffer b = ByteBuffer.allocate(bits.length * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < bits.length; i++) {
            b.putShort(2 * i, bits[i]);
        }
        return of(dtype, b, rows, cols);
    }

    private static void check(int length, int rows, int cols) {
        if (rows < 0 || cols <= 0 || length != (long) rows * cols) {
            throw new IllegalArgumentException(
                    "values: " + length + " (expected: rows " + rows + " x cols " + cols + ")");
        }
    }
}
