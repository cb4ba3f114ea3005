package moe.a2a.comm;

/**
 * How late each peer's frames were for one rank, per exchange phase, summed since its communicator
 * formed: for each call, the time from the call's start until the peer's frame was complete, which
 * is what the rank waited for that peer alone, whatever order it waited in. A peer that is late to
 * every exchange shows here on every other rank. Owned by the rank thread, which adds and reads.
 */
public final class PeerWaits {
    private final long[][] nanos;

    /**
     * @param size the communicator's ranks
     */
    public PeerWaits(int size) {
        this.nanos = new long[ExchangePhase.values().length][size];
    }

    /** Records that {@code peer}'s frame came {@code waitedNanos} into a call of {@code phase}. */
    public void record(ExchangePhase phase, int peer, long waitedNanos) {
        nanos[phase.ordinal()][peer] += waitedNanos;
    }

    /**
     * The time waited for each peer in {@code phase} so far, by the communicator's ranks; a copy.
     */
    public long[] total(ExchangePhase phase) {
        return nanos[phase.ordinal()].clone();
    }
}
