package moe.a2a.comm;

import java.util.Arrays;

/**
 * Which peer an exchange could not reach, read from the failure a communicator threw: the peer an
 * {@link ExchangeTimeoutException} waited for past the deadline, or one it could not connect to
 * ({@link PeerFailedException#unreachable()}). A peer that closed its connection is not named: it
 * aborted for a failure of its own, and the close is only the echo. Only failures this rank saw
 * itself count: a failure relayed from another rank names a pair this rank is not part of.
 */
public final class PeerFaults {
    /** {@link #peerOf}'s answer when the failure names no peer of this rank. */
    public static final int NONE = -1;

    private PeerFaults() {}

    /**
     * The peer that {@code failure}, or a cause of it, names as seen by {@code rank} (both in the
     * communicator's own numbering), or {@link #NONE}.
     */
    public static int peerOf(Throwable failure, int rank) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof ExchangeTimeoutException e && e.rank() == rank && e.peer() >= 0) {
                return e.peer();
            }
            if (t instanceof PeerFailedException e
                    && e.unreachable()
                    && e.rank() == rank
                    && e.peer() >= 0) {
                return e.peer();
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return NONE;
    }

    /** Whether {@code failure}, or a cause of it, is a wait for a peer past the deadline. */
    public static boolean timedOut(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof ExchangeTimeoutException) {
                return true;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return false;
    }

    /**
     * {@link #peerOf} in world ranks, for a group of the world ranks {@code members} (ascending;
     * empty for every rank), of which this rank is world rank {@code worldRank}.
     */
    public static int worldPeerOf(Throwable failure, int worldRank, int[] members) {
        if (members.length == 0) {
            return peerOf(failure, worldRank);
        }
        int self = Arrays.binarySearch(members, worldRank);
        if (self < 0) {
            return NONE;
        }
        int peer = peerOf(failure, self);
        return peer >= 0 && peer < members.length ? members[peer] : NONE;
    }
}
