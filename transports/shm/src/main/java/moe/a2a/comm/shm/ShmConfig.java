package moe.a2a.comm.shm;

import java.nio.file.Path;
import moe.a2a.comm.CollectiveArgs;

/**
 * One rank's settings for a shared-memory group. Immutable and validated when built.
 *
 * @param rank this rank
 * @param size world size
 * @param groupId shared by the members of one group (one epoch of a cluster); it names the group's
 *     files, so two live groups must not share one in the same directory
 * @param directory where the group's files live: a tmpfs such as {@code /dev/shm}, shared by every
 *     rank of the group
 * @param timeoutNs how long a collective (and joining) may wait for a peer
 * @param heartbeatTimeoutNs a peer whose heartbeat has not advanced for this long while this rank
 *     waits on it counts as stopped, and is named
 * @param initialRegionBytes the receive region each rank starts with; it grows as exchanges need
 */
public record ShmConfig(
        int rank,
        int size,
        long groupId,
        Path directory,
        long timeoutNs,
        long heartbeatTimeoutNs,
        long initialRegionBytes) {
    /** Where the files live unless told otherwise. */
    public static final Path DEFAULT_DIRECTORY = Path.of("/dev/shm");

    /** Default heartbeat timeout: far above any pause of a live JVM's daemon thread. */
    public static final long DEFAULT_HEARTBEAT_TIMEOUT_NS = 3_000_000_000L;

    /** Default size of a rank's receive region before it first grows. */
    public static final long DEFAULT_INITIAL_REGION_BYTES = 1L << 20;

    /** A group in {@link #DEFAULT_DIRECTORY} with the default heartbeat and region. */
    public ShmConfig(int rank, int size, long groupId, long timeoutNs) {
        this(rank, size, groupId, DEFAULT_DIRECTORY, timeoutNs);
    }

    /** A group in {@code directory} with the default heartbeat and region. */
    public ShmConfig(int rank, int size, long groupId, Path directory, long timeoutNs) {
        this(
                rank,
                size,
                groupId,
                directory,
                timeoutNs,
                DEFAULT_HEARTBEAT_TIMEOUT_NS,
                DEFAULT_INITIAL_REGION_BYTES);
    }

    public ShmConfig {
        if (size <= 0) {
            throw new IllegalArgumentException("size: " + size + " (expected: > 0)");
        }
        CollectiveArgs.checkRank("rank", rank, size);
        if (timeoutNs <= 0) {
            throw new IllegalArgumentException("timeoutNs: " + timeoutNs + " (expected: > 0)");
        }
        if (heartbeatTimeoutNs <= 0) {
            throw new IllegalArgumentException(
                    "heartbeatTimeoutNs: " + heartbeatTimeoutNs + " (expected: > 0)");
        }
        if (initialRegionBytes <= 0 || initialRegionBytes > ShmLayout.MAX_REGION_BYTES) {
            throw new IllegalArgumentException(
                    "initialRegionBytes: "
                            + initialRegionBytes
                            + " (expected: in (0, "
                            + ShmLayout.MAX_REGION_BYTES
                            + "])");
        }
    }
}
