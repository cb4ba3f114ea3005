package moe.a2a.dispatch;

import moe.a2a.kernels.DType;
import moe.a2a.kernels.RowKernels;

/**
 * The layout of one dispatched row in the send and receive buffers. The payload is the token as it
 * travels (in the step's dtype, or FP8 with its block scales); the routing tail tells the
 * destination which of its local experts the token chose and with what weight, so that combine can
 * weight the outputs where they are computed.
 *
 * <pre>
 *   0                          payloadBytes          + 4K                  + 8K = rowBytes
 *   +--------------------------+---------------------+---------------------+
 *   | payload                  | K × int32 slot      | K × float32 weight  |
 *   +--------------------------+---------------------+---------------------+
 *   payload: hidden × dtype, or (FP8) hidden × e4m3 then ceil(hidden / 128) × float32 scale
 *   slot: the expert's local slot on the destination rank, or -1 when that choice lives elsewhere
 * </pre>
 *
 * Combine rows are {@link #combineRowBytes()} long: the token in its own dtype. The sizes are
 * computed once, as the packer asks for offsets per row. Immutable.
 */
public final class DispatchRowLayout {
    private final int hidden;
    private final int topK;
    private final DType dtype;
    private final DispatchDType dispatchDType;
    private final int combineRowBytes;
    private final int payloadBytes;
    private final int rowBytes;

    public DispatchRowLayout(int hidden, int topK, DType dtype, DispatchDType dispatchDType) {
        this.hidden = hidden;
        this.topK = topK;
        this.dtype = dtype;
        this.dispatchDType = dispatchDType;
        this.combineRowBytes = hidden * dtype.sizeBytes();
        this.payloadBytes =
                dispatchDType == DispatchDType.FP8
                        ? RowKernels.fp8RowBytes(hidden)
                        : combineRowBytes;
        this.rowBytes = payloadBytes + topK * (Integer.BYTES + Float.BYTES);
    }

    public int hidden() {
        return hidden;
    }

    public int topK() {
        return topK;
    }

    /** The tokens' own dtype. */
    public DType dtype() {
        return dtype;
    }

    /** How the payload travels. */
    public DispatchDType dispatchDType() {
        return dispatchDType;
    }

    /** Bytes of the token as it travels in dispatch. */
    public int payloadBytes() {
        return payloadBytes;
    }

    /** Bytes of one row sent back by combine: the token in its own dtype. */
    public int combineRowBytes() {
        return combineRowBytes;
    }

    /** Bytes of one dispatched row. */
    public int rowBytes() {
        return rowBytes;
    }

    /** Offset of the slot of choice {@code k} within a row. */
    public int slotOffset(int k) {
        return payloadBytes + k * Integer.BYTES;
    }

    /** Offset of the weight of choice {@code k} within a row. */
    public int weightOffset(int k) {
        return payloadBytes + topK * Integer.BYTES + k * Float.BYTES;
    }
}
