package moe.a2a.comm;

/** A collective did not complete in time because a peer never arrived. */
public final class ExchangeTimeoutException extends A2aException {
    private static final long serialVersionUID = 1L;

    private final long step;
    private final ExchangePhase phase;
    private final int rank;
    private final int peer;
    private final long timeoutNs;

    public ExchangeTimeoutException(long step, ExchangePhase phase, int rank, int peer, long timeoutNs) {
        super("exchange timed out waiting for a peer: step=" + step + ", phase=" + phase + ", rank=" + rank
                + ", peer=" + peer + ", timeoutNs=" + timeoutNs);
        this.step = step;
        this.phase = phase;
        this.rank = rank;
        this.peer = peer;
        this.timeoutNs = timeoutNs;
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

    /** The first peer that never arrived. */
    public int peer() {
        return peer;
    }

    public long timeoutNs() {
        return timeoutNs;
    }
}
