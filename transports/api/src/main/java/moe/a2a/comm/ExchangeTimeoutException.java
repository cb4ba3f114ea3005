package moe.a2a.comm;

/**
 * A collective did not complete in time because a peer never arrived. {@link #peer()} names it when
 * the transport can tell ({@link #UNKNOWN_PEER} when it cannot, as with NCCL).
 */
public final class ExchangeTimeoutException extends A2aException {
    private static final long serialVersionUID = 1L;

    /** {@link #peer()} when the transport cannot tell which peer is missing. */
    public static final int UNKNOWN_PEER = -1;

    private final long step;
    private final ExchangePhase phase;
    private final int rank;
    private final int peer;
    private final long timeoutNs;

    public ExchangeTimeoutException(
            long step, ExchangePhase phase, int rank, int peer, long timeoutNs) {
        super(
                "exchange timed out waiting for a peer: step="
                        + step
                        + ", phase="
                        + phase
                        + ", rank="
                        + rank
                        + ", peer="
                        + (peer == UNKNOWN_PEER ? "unknown" : Integer.toString(peer))
                        + ", timeoutNs="
                        + timeoutNs);
        this.step = step;
        this.phase = phase;
        this.rank = rank;
        this.peer = peer;
        this.timeoutNs = timeoutNs;
    }

    /**
     * A group's join that timed out before its first step, at the barrier that joining is, without
     * naming the member that never arrived (NCCL's init cannot tell).
     */
    public static ExchangeTimeoutException joining(int rank, long timeoutNs) {
        return new ExchangeTimeoutException(
                -1, ExchangePhase.BARRIER, rank, UNKNOWN_PEER, timeoutNs);
    }

    /** The step the exchange belonged to (-1 while connecting). */
    public long step() {
        return step;
    }

    public ExchangePhase phase() {
        return phase;
    }

    /** The rank that waited. */
    public int rank() {
        return rank;
    }

    /** The first peer that never arrived, or {@link #UNKNOWN_PEER}. */
    public int peer() {
        return peer;
    }

    public long timeoutNs() {
        return timeoutNs;
    }
}
