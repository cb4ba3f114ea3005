package moe.a2a.comm;

/**
 * What a rank's data plane tells its peers, through whoever forms the group, once bound: its
 * address and, from the rank that makes it, the group's token.
 *
 * @param address where peers reach this rank (host:port), or empty when the plane needs none
 * @param groupToken the token every rank joins the group with (an NCCL unique id, made by rank 0),
 *     or empty
 */
public record PlaneBinding(String address, byte[] groupToken) {
    /** Nothing to tell. */
    public static final PlaneBinding NONE = new PlaneBinding("", new byte[0]);

    /** Peers reach this rank at {@code address}. */
    public static PlaneBinding at(String address) {
        return new PlaneBinding(address, new byte[0]);
    }
}
