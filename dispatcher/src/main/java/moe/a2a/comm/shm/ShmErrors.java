package moe.a2a.comm.shm;

import moe.a2a.comm.A2aException;

/** The shared-memory transport's errors for counts and lengths that disagree. */
final class ShmErrors {
    private ShmErrors() {}

    static A2aException countMismatch(int src, int dst, long sent, long expected) {
        return new A2aException(
                "all-to-all-v counts disagree: src="
                        + src
                        + ", dst="
                        + dst
                        + ", sentBytes="
                        + sent
                        + ", expectedBytes="
                        + expected);
    }

    static A2aException lengthMismatch(int src, int dst, long sent, long expected) {
        return new A2aException(
                "point-to-point lengths disagree: src="
                        + src
                        + ", dst="
                        + dst
                        + ", sentBytes="
                        + sent
                        + ", expectedBytes="
                        + expected);
    }
}
