package moe.a2a.control.cluster;

import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * Which ranks are evicted as stragglers ({@code --evict-stragglers}), and for how long each one's
 * next eviction lasts: {@link #FIRST_NANOS}, doubled for each eviction after, up to {@link
 * #MAX_NANOS}. Not thread-safe: guarded by {@link RemoteCluster}'s lock.
 */
final class StragglerEvictions {
    static final long FIRST_NANOS = TimeUnit.SECONDS.toNanos(30);
    static final long MAX_NANOS = TimeUnit.MINUTES.toNanos(10);

    private final boolean[] evicted;
    private final long[] next;

    StragglerEvictions(int worldSize) {
        this.evicted = new boolean[worldSize];
        this.next = new long[worldSize];
        Arrays.fill(next, FIRST_NANOS);
    }

    boolean isEvicted(int rank) {
        return evicted[rank];
    }

    /** Evicts {@code rank}; returns for how long, and doubles its next eviction. */
    long evict(int rank) {
        long nanos = next[rank];
        next[rank] = Math.min(MAX_NANOS, nanos * 2);
        evicted[rank] = true;
        return nanos;
    }

    /** Takes {@code rank} back; whether it was evicted. */
    boolean readmit(int rank) {
        boolean was = evicted[rank];
        evicted[rank] = false;
        return was;
    }

    /** The ranks of {@code ranks} not evicted, in order. */
    int[] without(int[] ranks) {
        return Arrays.stream(ranks).filter(r -> !evicted[r]).toArray();
    }
}
