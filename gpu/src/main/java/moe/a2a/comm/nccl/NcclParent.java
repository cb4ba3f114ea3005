package moe.a2a.comm.nccl;

import java.util.Arrays;
import moe.a2a.comm.GroupShrink;
import moe.a2a.comm.ParentGroup;
import org.jspecify.annotations.Nullable;

/**
 * The communicator a {@link NcclDataPlane} formed last, kept after its group is dropped until the
 * plane forms the next one or closes: the next epoch's members may shrink it into theirs. Owned by
 * the worker's data-plane thread.
 */
final class NcclParent {
    private final NcclCommunicator comm;
    private final ParentGroup group;

    NcclParent(NcclCommunicator comm, ParentGroup group) {
        this.comm = comm;
        this.group = group;
        comm.keepForPlane();
    }

    /** What to report at the next bind, or null when the communicator cannot shrink. */
    @Nullable ParentGroup offer() {
        return comm.canShrink() ? group : null;
    }

    /**
     * Checks {@code shrink} against this parent for the epoch's {@code rank} of {@code worldSize}
     * (the control plane decided it from this plane's own report), and returns the communicator
     * {@code nccl} shrinks.
     */
    NcclCommunicator shrink(
            GroupShrink shrink,
            int rank,
            int worldSize,
            long timeoutNs,
            NcclDataPlane.NcclProvider nccl) {
        int[] excluded = shrink.excludedRanks();
        if (shrink.parentEpoch() != group.epoch()) {
            throw new IllegalStateException(
                    "form.nccl_shrink.parent_epoch: "
                            + shrink.parentEpoch()
                            + " (expected: "
                            + group.epoch()
                            + ", the parent this worker holds)");
        }
        if (Arrays.binarySearch(excluded, group.rank()) >= 0
                || GroupShrink.survivorRank(group.rank(), excluded) != rank
                || group.size() - excluded.length != worldSize) {
            throw new IllegalStateException(
                    "form.nccl_shrink.excluded_ranks: "
                            + Arrays.toString(excluded)
                            + " (expected: without parent rank "
                            + group.rank()
                            + " of "
                            + group.size()
                            + ", leaving it rank "
                            + rank
                            + " of "
                            + worldSize
                            + ")");
        }
        return nccl.shrink(comm, excluded, timeoutNs);
    }

    /** Frees the communicator. */
    void release() {
        comm.release();
    }
}
