package moe.a2a.protocol;

import com.google.protobuf.ByteString;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import moe.a2a.kernels.DType;
import moe.a2a.v1.Tensor;

/** Converts between the wire {@link Tensor} and the data plane's dtypes and arrays. */
public final class TensorCodec {
    private TensorCodec() {}

    /** The data-plane dtype of {@code tensor}, or an error naming {@code field}. */
    public static DType dtype(moe.a2a.v1.DType wire, String field) {
        switch (wire) {
            case BF16:
                return DType.BF16;
            case FP16:
                return DType.FP16;
            case FP32:
                return DType.FP32;
            case DTYPE_UNSPECIFIED:
                throw new InvalidRequestException(
                        field + ".dtype: DTYPE_UNSPECIFIED (expected: BF16, FP16 or FP32)");
            default:
                throw new InvalidRequestException(
                        field + ".dtype: unknown value (expected: BF16, FP16 or FP32)");
        }
    }

    public static moe.a2a.v1.DType wire(DType dtype) {
        switch (dtype) {
            case BF16:
                return moe.a2a.v1.DType.BF16;
            case FP16:
                return moe.a2a.v1.DType.FP16;
            default:
                return moe.a2a.v1.DType.FP32;
        }
    }

    /** A {@code [rows, cols]} tensor holding {@code data}. */
    public static Tensor tensor(DType dtype, long rows, long cols, ByteString data) {
        return Tensor.newBuilder()
                .setDtype(wire(dtype))
                .addShape(rows)
                .addShape(cols)
                .setData(data)
                .build();
    }

    /** A {@code [rows, cols]} tensor of fp32 values encoded in {@code dtype}. */
    public static Tensor tensor(DType dtype, int rows, int cols, float[] values) {
        ByteBuffer buf =
                ByteBuffer.allocate(values.length * dtype.sizeBytes())
                        .order(ByteOrder.LITTLE_ENDIAN);
        dtype.encode(values, 0, values.length, buf, 0);
        return tensor(dtype, rows, cols, ByteString.copyFrom(buf.array()));
    }

    /** Decodes a validated tensor's elements to fp32. */
    public static float[] floats(Tensor tensor) {
        DType dtype = dtype(tensor.getDtype(), "tensor");
        ByteBuffer buf = tensor.getData().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
        float[] out = new float[tensor.getData().size() / dtype.sizeBytes()];
        dtype.decode(buf, 0, out, 0, out.length);
        return out;
    }
}
