package moe.a2a.comm.tcp;

import java.net.InetSocketAddress;
import moe.a2a.comm.CollectiveArgs;
import org.jspecify.annotations.Nullable;

/**
 * One rank's settings for a TCP group. Immutable and validated when built.
 *
 * @param rank this rank
 * @param size world size
 * @param groupId shared by the members of one group (one epoch of a cluster); a connection that
 *     presents another is refused, so a stale or foreign process cannot join
 * @param bindAddress where this rank listens; every rank accepts the connections of the ranks above
 *     it and connects to the ranks below it
 * @param timeoutNs how long a collective (and connecting) may wait for a peer
 * @param maxFrameBytes DATA frames claiming more are refused and their connection closed
 * @param tls mutual TLS on every connection of the group, or null for plaintext
 */
public record TcpConfig(
        int rank,
        int size,
        long groupId,
        InetSocketAddress bindAddress,
        long timeoutNs,
        long maxFrameBytes,
        @Nullable DataPlaneTls tls) {
    /** Default frame limit: the largest receive buffer a rank can hold. */
    public static final long DEFAULT_MAX_FRAME_BYTES = Integer.MAX_VALUE;

    /** A plaintext group. */
    public TcpConfig(
            int rank,
            int size,
            long groupId,
            InetSocketAddress bindAddress,
            long timeoutNs,
            long maxFrameBytes) {
        this(rank, size, groupId, bindAddress, timeoutNs, maxFrameBytes, null);
    }

    public TcpConfig {
        if (size <= 0) {
            throw new IllegalArgumentException("size: " + size + " (expected: > 0)");
        }
        CollectiveArgs.checkRank("rank", rank, size);
        if (timeoutNs <= 0) {
            throw new IllegalArgumentException("timeoutNs: " + timeoutNs + " (expected: > 0)");
        }
        if (maxFrameBytes <= 0) {
            throw new IllegalArgumentException(
                    "maxFrameBytes: " + maxFrameBytes + " (expected: > 0)");
        }
    }
}
