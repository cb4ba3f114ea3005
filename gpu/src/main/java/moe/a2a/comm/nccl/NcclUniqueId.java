package moe.a2a.comm.nccl;

import java.util.Arrays;

/**
 * The 128 bytes of an {@code ncclUniqueId}: made by rank 0, carried to every rank by the control
 * plane's join protocol, and passed to {@code ncclCommInitRank}. Immutable.
 */
public final class NcclUniqueId {
    /** {@code NCCL_UNIQUE_ID_BYTES}. */
    public static final int BYTES = 128;

    private final byte[] bytes;

    private NcclUniqueId(byte[] bytes) {
        this.bytes = bytes;
    }

    /**
     * Checks and copies {@code bytes}.
     *
     * @param field the field the bytes came from, named in the error
     */
    public static NcclUniqueId of(byte[] bytes, String field) {
        if (bytes.length != BYTES) {
            throw new IllegalArgumentException(
                    field
                            + ": "
                            + bytes.length
                            + " bytes (expected: "
                            + BYTES
                            + ", an ncclUniqueId)");
        }
        return new NcclUniqueId(bytes.clone());
    }

    public byte[] toByteArray() {
        return bytes.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof NcclUniqueId other && Arrays.equals(bytes, other.bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    @Override
    public String toString() {
        return "NcclUniqueId[" + BYTES + " bytes]";
    }
}
