package moe.a2a.comm;

import org.jspecify.annotations.Nullable;

/**
 * What a rank's data plane tells its peers, through whoever forms the group, once bound: its
 * address, from the rank that makes it the group's token, and the parent it could shrink from.
 *
 * @param address where peers reach this rank (host:port), or empty when the plane needs none
 * @param groupToken the token every rank joins the group with (an NCCL unique id, made by rank 0),
 *     or empty
 * @param parent the communicator this rank still holds from an earlier epoch and could shrink, or
 *     null
 */
public record PlaneBinding(String address, byte[] groupToken, @Nullable ParentGroup parent) {
    /** Nothing to tell. */
    public static final PlaneBinding NONE = new PlaneBinding("", new byte[0]);

    /** Without a parent. */
    public PlaneBinding(String address, byte[] groupToken) {
        this(address, groupToken, null);
    }

    /** Peers reach this rank at {@code address}. */
    public static PlaneBinding at(String address) {
        return new PlaneBinding(address, new byte[0]);
    }
}
