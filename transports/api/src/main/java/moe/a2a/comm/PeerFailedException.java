package moe.a2a.comm;

/** The group was broken by a failure elsewhere: a peer died, aborted or timed out. */
public final class PeerFailedException extends A2aException {
    private static final long serialVersionUID = 1L;

    private final int rank;
    private final int peer;
    private final boolean unreachable;

    /** A failure whose origin this rank cannot name (for example another rank's timeout). */
    public PeerFailedException(int rank, Throwable cause) {
        super("exchange group failed: rank=" + rank + ", cause=" + cause.getMessage(), cause);
        this.rank = rank;
        this.peer = -1;
        this.unreachable = false;
    }

    /** A failure of the connection to, or reported by, {@code peer}. */
    public PeerFailedException(int rank, int peer, String reason) {
        this(rank, peer, reason, false);
    }

    private PeerFailedException(int rank, int peer, String reason, boolean unreachable) {
        super("exchange peer failed: rank=" + rank + ", peer=" + peer + ", reason=" + reason);
        this.rank = rank;
        this.peer = peer;
        this.unreachable = unreachable;
    }

    /** {@code peer} could not be connected to at all (refused, or no answer by the deadline). */
    public static PeerFailedException unreachable(int rank, int peer, String reason) {
        return new PeerFailedException(rank, peer, reason, true);
    }

    /** The rank that observed the failure. */
    public int rank() {
        return rank;
    }

    /** Whether the connection to {@link #peer()} never came up. */
    public boolean unreachable() {
        return unreachable;
    }

    /** The peer that failed, or -1 when unknown. */
    public int peer() {
        return peer;
    }
}
