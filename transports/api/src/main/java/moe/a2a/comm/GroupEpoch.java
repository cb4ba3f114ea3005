package moe.a2a.comm;

/**
 * One formation of a group as a rank's data plane binds it ({@link DataPlane#bind}).
 *
 * @param epoch increases every time the group is formed again
 * @param rank this rank's place in the group
 * @param worldSize ranks in the group
 * @param groupId the epoch's shared secret: names its files, authenticates its connections
 * @param exchangeTimeoutNs the collective deadline of the communicator formed
 */
public record GroupEpoch(
        long epoch, int rank, int worldSize, long groupId, long exchangeTimeoutNs) {
    /** The same epoch under another group id, for a group formed beside it (its rail, say). */
    public GroupEpoch withGroupId(long id) {
        return new GroupEpoch(epoch, rank, worldSize, id, exchangeTimeoutNs);
    }

    /** The same epoch as {@code r} of {@code size}, for a sub-group of it. */
    public GroupEpoch as(int r, int size) {
        return new GroupEpoch(epoch, r, size, groupId, exchangeTimeoutNs);
    }
}
