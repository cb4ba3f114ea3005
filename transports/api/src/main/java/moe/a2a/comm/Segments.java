package moe.a2a.comm;

/**
 * The per-peer segment layout every {@link Communicator} shares: counts checked against the group
 * size, segments at the exclusive prefix sums of the counts.
 */
public final class Segments {
    private Segments() {}

    /**
     * Throws naming {@code field} unless {@code counts} has one entry per rank of a group of {@code
     * size}.
     */
    public static void checkLength(String field, long[] counts, int size) {
        if (counts.length != size) {
            throw new IllegalArgumentException(
                    field + ".length: " + counts.length + " (expected: " + size + ")");
        }
    }

    /**
     * Writes each segment's start (the exclusive prefix sum of {@code counts}) into {@code
     * offsets}; returns the total.
     */
    public static long offsets(long[] counts, long[] offsets) {
        long at = 0;
        for (int p = 0; p < counts.length; p++) {
            offsets[p] = at;
            at += counts[p];
        }
        return at;
    }
}
