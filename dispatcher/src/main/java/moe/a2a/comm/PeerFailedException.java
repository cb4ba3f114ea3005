package moe.a2a.comm;

/** The group was broken by a failure elsewhere (another rank timed out, aborted or closed). */
public final class PeerFailedException extends A2aException {
    private static final long serialVersionUID = 1L;

    private final int rank;

    public PeerFailedException(int rank, Throwable cause) {
        super("exchange group failed: rank=" + rank + ", cause=" + cause.getMessage(), cause);
        this.rank = rank;
    }

    /** The rank that observed the failure. */
    public int rank() {
        return rank;
    }
}
