package moe.a2a.control.cluster;

import java.util.List;
import moe.a2a.v1.NcclParent;
import moe.a2a.v1.NcclShrink;
import org.jspecify.annotations.Nullable;

/**
 * Whether an NCCL epoch's members shrink the communicator they share ({@code ncclCommShrink})
 * instead of joining a fresh one: decided here once, from every member's Bound, so that every
 * member does the same. Only when each member still holds the same parent (epoch and group id),
 * their ranks in it increase with their ranks in the new group (NCCL keeps the survivors' order),
 * and at least one of its ranks is left out; otherwise a fresh unique id, as for any growth,
 * reorder, or member without a healthy parent on an NCCL that can shrink.
 */
final class NcclShrinkDecision {
    private NcclShrinkDecision() {}

    /**
     * The shrink for a group whose members, in rank order, reported {@code parents} (null where a
     * member reported none), or null for a fresh unique id.
     */
    static @Nullable NcclShrink decide(List<@Nullable NcclParent> parents) {
        if (parents.isEmpty() || parents.get(0) == null) {
            return null;
        }
        NcclParent first = parents.get(0);
        int size = first.getSize();
        if (parents.size() >= size) {
            return null;
        }
        boolean[] kept = new boolean[size];
        int previous = -1;
        for (NcclParent p : parents) {
            if (p == null
                    || p.getEpoch() != first.getEpoch()
                    || p.getGroupId() != first.getGroupId()
                    || p.getSize() != size
                    || p.getRank() <= previous
                    || p.getRank() >= size) {
                return null;
            }
            previous = p.getRank();
            kept[previous] = true;
        }
        NcclShrink.Builder shrink = NcclShrink.newBuilder().setParentEpoch(first.getEpoch());
        for (int r = 0; r < size; r++) {
            if (!kept[r]) {
                shrink.addExcludedRanks(r);
            }
        }
        return shrink.build();
    }
}
