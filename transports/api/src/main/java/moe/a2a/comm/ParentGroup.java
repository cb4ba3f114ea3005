package moe.a2a.comm;

/**
 * A communicator a rank's data plane still holds from an earlier group epoch, healthy, that the
 * next epoch's group may be shrunk from ({@link GroupShrink}) instead of formed afresh.
 *
 * @param epoch the group epoch it was formed in
 * @param groupId that epoch's group id: epochs count again after a control plane restart
 * @param rank this rank's place in it
 * @param size its number of ranks
 */
public record ParentGroup(long epoch, long groupId, int rank, int size) {}
