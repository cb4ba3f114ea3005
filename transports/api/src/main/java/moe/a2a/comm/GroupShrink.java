package moe.a2a.comm;

/**
 * Forms an epoch's group by leaving ranks out of the members' common {@link ParentGroup}: the
 * survivors keep their order and are numbered again from 0.
 *
 * @param parentEpoch the {@link ParentGroup#epoch} every member holds
 * @param excludedRanks the parent's ranks left out, ascending
 */
public record GroupShrink(long parentEpoch, int[] excludedRanks) {
    /** The rank that parent rank {@code parentRank} takes once {@code excludedRanks} leave. */
    public static int survivorRank(int parentRank, int[] excludedRanks) {
        int below = 0;
        for (int r : excludedRanks) {
            below += r < parentRank ? 1 : 0;
        }
        return parentRank - below;
    }
}
