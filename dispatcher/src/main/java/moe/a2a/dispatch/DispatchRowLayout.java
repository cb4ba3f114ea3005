package moe.a2a.dispatch;

/**
 * The layout of one dispatched row in the send and receive buffers. The payload is the token in the
 * step's dtype; the routing tail tells the destination which of its local experts the token chose
 * and with what weight, so that combine can weight the outputs where they are computed.
 *
 * <pre>
 *   0                          payloadBytes          + 4K                  + 8K = rowBytes
 *   +--------------------------+---------------------+---------------------+
 *   | payload: hidden × dtype  | K × int32 slot      | K × float32 weight  |
 *   +--------------------------+---------------------+---------------------+
 *   slot: the expert's local slot on the destination rank, or -1 when that choice lives elsewhere
 * </pre>
 *
 * Combine rows are the payload alone. Immutable.
 */
public record DispatchRowLayout(int hidden, int topK, DType dtype) {

    /** Bytes of the token itself. */
    public int payloadBytes() {
        return hidden * dtype.sizeBytes();
    }

    /** Bytes of one dispatched row. */
    public int rowBytes() {
        return payloadBytes() + topK * (Integer.BYTES + Float.BYTES);
    }

    /** Offset of the slot of choice {@code k} within a row. */
    public int slotOffset(int k) {
        return payloadBytes() + k * Integer.BYTES;
    }

    /** Offset of the weight of choice {@code k} within a row. */
    public int weightOffset(int k) {
        return payloadBytes() + topK * Integer.BYTES + k * Float.BYTES;
    }
}
