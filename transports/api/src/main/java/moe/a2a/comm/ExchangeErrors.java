package moe.a2a.comm;

/**
 * The errors of counts and lengths that disagree between a sender and a receiver, worded alike on
 * every transport.
 */
public final class ExchangeErrors {
    private ExchangeErrors() {}

    /** An all-to-all-v segment of another length than the receiver's count for it. */
    public static A2aException countMismatch(int src, int dst, long sentBytes, long expectedBytes) {
        return mismatch("all-to-all-v counts disagree", src, dst, sentBytes, expectedBytes);
    }

    /** A point-to-point message of another length than the receiver posted. */
    public static A2aException lengthMismatch(
            int src, int dst, long sentBytes, long expectedBytes) {
        return mismatch("point-to-point lengths disagree", src, dst, sentBytes, expectedBytes);
    }

    private static A2aException mismatch(
            String what, int src, int dst, long sentBytes, long expectedBytes) {
        return new A2aException(
                what
                        + ": src="
                        + src
                        + ", dst="
                        + dst
                        + ", sentBytes="
                        + sentBytes
                        + ", expectedBytes="
                        + expectedBytes);
    }
}
