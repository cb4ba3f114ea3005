package moe.a2a.comm;

import java.util.List;

/**
 * Every rank's binding of one epoch, gathered, as a rank's data plane forms the group with them
 * ({@link DataPlane#form}).
 *
 * @param epoch the epoch bound
 * @param addresses every rank's {@link PlaneBinding#address}, in rank order (empty when the plane
 *     needs none)
 * @param groupToken the group's token from the rank that made it, or empty
 */
public record GroupPeers(long epoch, List<String> addresses, byte[] groupToken) {}
