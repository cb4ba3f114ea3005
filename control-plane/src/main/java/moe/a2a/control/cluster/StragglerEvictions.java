package moe.a2a.control.cluster;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * Which ranks are evicted as stragglers ({@code --evict-stragglers}), and for how long each one's
 * next eviction lasts: {@code --straggler-eviction} ({@link #FIRST_NANOS} unless set), doubled for
 * each eviction after, up to {@link #MAX_NANOS}. Not thread-safe: guarded by {@link
 * RemoteCluster}'s lock.
 */
final class StragglerEvictions {
    static final long FIRST_NANOS = TimeUnit.SECONDS.toNanos(30);
    static final long MAX_NANOS = TimeUnit.MINUTES.toNanos(10);

    private final boolean[] evicted;
    private final long[] next;
    private final Instant[] readmitAt;

    StragglerEvictions(int worldSize, long firstNanos) {
        this.evicted = new boolean[worldSize];
        this.next = new long[worldSize];
        this.readmitAt = new Instant[worldSize];
        Arrays.fill(next, firstNanos);
    }

    boolean isEvicted(int rank) {
        return evicted[rank];
    }

    /** Evicts {@code rank}; returns for how long, and doubles its next eviction. */
    long evict(int rank) {
        long nanos = next[rank];
        next[rank] = Math.min(MAX_NANOS, nanos * 2);
        evicted[rank] = true;
        readmitAt[rank] = Instant.now().plusNanos(nanos).truncatedTo(ChronoUnit.SECONDS);
        return nanos;
    }

    /** When {@code rank}'s last eviction ends, to the second. */
    Instant readmitAt(int rank) {
        return readmitAt[rank];
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
