package moe.a2a.comm.nccl;

import moe.a2a.comm.Communicator;
import moe.a2a.comm.DataPlane;
import moe.a2a.comm.GroupEpoch;
import moe.a2a.comm.GroupPeers;
import moe.a2a.comm.GroupShrink;
import moe.a2a.comm.ParentGroup;
import moe.a2a.comm.PlaneBinding;
import moe.a2a.comm.Transport;
import org.jspecify.annotations.Nullable;

/**
 * Over NCCL: on bind, rank 0 makes the group's {@code ncclUniqueId} and reports it as the group's
 * token (the control plane hands it to every rank); form joins the NCCL group with it. Where the
 * NCCL pieces come from is a {@link NcclProvider}: {@link #onDevice} for a real GPU (the rank then
 * runs on it: {@link #device}), a simulation in tests.
 *
 * <p>The communicator formed last stays with this plane after its group closes it ({@link
 * NcclParent}): each bind reports it while it can shrink, and when the control plane answers with a
 * shrink of it, form calls {@code ncclCommShrink} instead of joining a fresh group. Form frees it
 * either way, as does {@link #close}; a bound epoch dropped unformed keeps it, for the epoch after.
 */
public final class NcclDataPlane implements DataPlane {
    /** Where an NCCL rank's pieces come from. */
    public interface NcclProvider {
        /** A fresh unique id for a new group (called on rank 0). */
        NcclUniqueId newUniqueId();

        /**
         * Joins the group {@code id} as {@code rank} of {@code worldSize}, waiting at most {@code
         * timeoutNs}.
         */
        NcclCommunicator join(NcclUniqueId id, int rank, int worldSize, long timeoutNs);

        /**
         * Shrinks {@code parent} without {@code excludedRanks} ({@link NcclCommunicator#shrink}).
         */
        default NcclCommunicator shrink(
                NcclCommunicator parent, int[] excludedRanks, long timeoutNs) {
            return parent.shrink(excludedRanks, timeoutNs);
        }

        /** The CUDA device the rank's rows stay on, or -1 when the rank runs on the host. */
        int device();
    }

    private final NcclProvider nccl;
    private int rank = -1;
    private int worldSize;
    private long timeoutNs;
    private long epoch = -1;
    private long groupId;
    private @Nullable NcclParent parent;

    public NcclDataPlane(NcclProvider nccl) {
        this.nccl = nccl;
    }

    /**
     * NCCL on CUDA device {@code device}, where the rank then runs. Needs a usable GPU ({@link
     * moe.a2a.gpu.GpuProbe}).
     */
    public static NcclDataPlane onDevice(int device) {
        return new NcclDataPlane(
                new NcclProvider() {
                    @Override
                    public NcclUniqueId newUniqueId() {
                        return NcclCommunicator.newUniqueId();
                    }

                    @Override
                    public NcclCommunicator join(
                            NcclUniqueId id, int rank, int worldSize, long timeoutNs) {
                        return NcclCommunicator.create(id, rank, worldSize, device, timeoutNs);
                    }

                    @Override
                    public int device() {
                        return device;
                    }
                });
    }

    @Override
    public Transport transport() {
        return NcclTransportProvider.NCCL;
    }

    @Override
    public int device() {
        return nccl.device();
    }

    @Override
    public PlaneBinding bind(GroupEpoch group) {
        this.rank = group.rank();
        this.worldSize = group.worldSize();
        this.timeoutNs = group.exchangeTimeoutNs();
        this.epoch = group.epoch();
        this.groupId = group.groupId();
        ParentGroup offer = parent == null ? null : parent.offer();
        // rank 0 makes a unique id only where no shrink can follow (one needs rank 0's parent, and
        // leaves a rank of it out): NCCL's bootstrap root behind an id nobody joins waits for good
        boolean mayShrink = offer != null && worldSize < offer.size();
        byte[] id = rank == 0 && !mayShrink ? nccl.newUniqueId().toByteArray() : new byte[0];
        return new PlaneBinding("", id, offer);
    }

    @Override
    public Communicator form(GroupPeers peers) {
        if (peers.epoch() != epoch) {
            throw new IllegalStateException(
                    "form.epoch: "
                            + peers.epoch()
                            + " (expected: "
                            + epoch
                            + ", the epoch this worker bound)");
        }
        long formed = epoch;
        epoch = -1;
        NcclParent from = parent;
        parent = null;
        GroupShrink shrink = peers.shrink();
        if (shrink == null && from != null) {
            // freed before a fresh init, whose buffers may need the room on a full device
            from.release();
            from = null;
        }
        try {
            NcclCommunicator comm =
                    shrink != null
                            ? shrinkFrom(from, shrink)
                            : nccl.join(
                                    NcclUniqueId.of(peers.groupToken(), "form.nccl_unique_id"),
                                    rank,
                                    worldSize,
                                    timeoutNs);
            parent = new NcclParent(comm, new ParentGroup(formed, groupId, rank, worldSize));
            return comm;
        } finally {
            if (from != null) {
                from.release();
            }
        }
    }

    private NcclCommunicator shrinkFrom(@Nullable NcclParent from, GroupShrink shrink) {
        if (from == null) {
            throw new IllegalStateException(
                    "form.nccl_shrink: parent epoch "
                            + shrink.parentEpoch()
                            + " (expected: unset, this worker holds no parent)");
        }
        return from.shrink(shrink, rank, worldSize, timeoutNs, nccl);
    }

    @Override
    public void drop() {
        epoch = -1;
    }

    /**
     * Frees the communicator kept, so the next epoch joins a fresh one and its rank 0 makes the
     * unique id (asked when an epoch could neither shrink nor get an id).
     */
    @Override
    public void freeKept() {
        if (parent != null) {
            parent.release();
            parent = null;
        }
    }

    /** Drops the bound epoch and frees the communicator kept. */
    @Override
    public void close() {
        drop();
        freeKept();
    }
}
