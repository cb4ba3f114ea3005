package moe.a2a.comm;

import java.nio.ByteBuffer;
import moe.a2a.kernels.DType;

/**
 * The argument checks of the {@link Communicator} collectives, shared by every transport so that a
 * bad argument is refused with the same message whichever runs it.
 */
public final class CollectiveArgs {
    private CollectiveArgs() {}

    /**
     * The bytes of {@code count} elements of {@code dtype}; refuses a negative or too large one.
     */
    public static int checkCount(String field, int count, DType dtype) {
        checkNonNegative(field, count);
        long bytes = (long) count * dtype.sizeBytes();
        if (bytes > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(
                    field + ": " + count + " (expected: at most " + Integer.MAX_VALUE + " bytes)");
        }
        return (int) bytes;
    }

    public static void checkNonNegative(String field, int value) {
        if (value < 0) {
            throw new IllegalArgumentException(field + ": " + value + " (expected: >= 0)");
        }
    }

    /** {@code buf} holds at least {@code bytes} bytes from index 0. */
    public static void checkCapacity(String field, ByteBuffer buf, long bytes) {
        if (buf.capacity() < bytes) {
            throw new IllegalArgumentException(
                    field + ".capacity: " + buf.capacity() + " (expected: >= " + bytes + " bytes)");
        }
    }

    /** {@code rank} is one of the {@code size} ranks ({@code field} names it: root, to, from). */
    public static void checkRank(String field, int rank, int size) {
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException(
                    field + ": " + rank + " (expected: in [0, " + size + "))");
        }
    }

    /**
     * {@code peer} is one of the {@code size} ranks or {@link Communicator#NONE} ({@code field}
     * names it: to, from).
     */
    public static void checkPeer(String field, int peer, int size) {
        if (peer != Communicator.NONE && (peer < 0 || peer >= size)) {
            throw new IllegalArgumentException(
                    field + ": " + peer + " (expected: NONE or in [0, " + size + "))");
        }
    }
}
