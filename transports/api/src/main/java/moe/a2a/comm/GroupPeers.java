package moe.a2a.comm;

import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Every rank's binding of one epoch, gathered, as a rank's data plane forms the group with them
 * ({@link DataPlane#form}).
 *
 * @param epoch the epoch bound
 * @param addresses every rank's {@link PlaneBinding#address}, in rank order (empty when the plane
 *     needs none)
 * @param groupToken the group's token from the rank that made it, or empty
 * @param shrink the common parent every rank shrinks instead of joining {@code groupToken}'s group,
 *     or null
 */
public record GroupPeers(
        long epoch, List<String> addresses, byte[] groupToken, @Nullable GroupShrink shrink) {
    /** Formed from the token, not shrunk. */
    public GroupPeers(long epoch, List<String> addresses, byte[] groupToken) {
        this(epoch, addresses, groupToken, null);
    }
}
