package moe.a2a.comm;

/**
 * How a worker process builds its rank's communicator for one group epoch, in the two steps of
 * forming a group: {@link #bind} (what the rank tells its peers), then {@link #form} (with what
 * they told). Made by a {@link TransportProvider}; used by the worker's data-plane thread only.
 */
public interface DataPlane extends AutoCloseable {
    Transport transport();

    /**
     * The memory domain the ranks of one group must share ({@link TransportReach#HOST}), or empty
     * when any host will do.
     */
    default String domain() {
        return "";
    }

    /**
     * The CUDA device this plane keeps a rank's rows on (the rank then runs on it), or -1 for host
     * memory.
     */
    default int device() {
        return -1;
    }

    /** What this plane runs on, for the worker's start-up line; empty when nothing to say. */
    default String description() {
        return "";
    }

    /** Gets ready for {@code epoch}; returns what the rank's peers need to form the group. */
    PlaneBinding bind(GroupEpoch epoch);

    /**
     * Connects this rank to the group of the epoch last bound; the communicator is the caller's to
     * close.
     */
    Communicator form(GroupPeers peers);

    /** Forgets an epoch that was bound but not formed. */
    void drop();

    /**
     * Frees what this plane kept of its last group for the next to reuse (an NCCL communicator to
     * shrink), before the next bind: that group then forms afresh.
     */
    default void freeKept() {}

    @Override
    void close();
}
