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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 *
 * <p>NCCL's bootstrap root behind a unique id waits, on a thread and a listening socket of rank 0's
 * host, until as many ranks have joined as the first to arrive names, and NCCL has no call that
 * ends it. So rank 0 joins an id of its epoch dropped unformed (nobody else received it: the
 * control plane hands it out in FormGroup) alone, as a group of one, before its next bind or on
 * close, and frees that communicator at once.
 */
public final class NcclDataPlane implements DataPlane {
    private static final Logger LOG = LoggerFactory.getLogger(NcclDataPlane.class);

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

    /** The unique id rank 0 made for the epoch bound, until its form joins it. */
    private @Nullable NcclUniqueId unjoined;

    /** The epoch {@link #unjoined} was made for. */
    private long unjoinedEpoch;

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
        endUnjoined();
        this.rank = group.rank();
        this.worldSize = group.worldSize();
        this.timeoutNs = group.exchangeTimeoutNs();
        this.epoch = group.epoch();
        this.groupId = group.groupId();
        ParentGroup offer = parent == null ? null : parent.offer();
        // rank 0 makes a unique id only where no shrink can follow (one needs rank 0's parent, and
        // leaves a rank of it out): NCCL's bootstrap root behind an id nobody joins waits for good
        boolean mayShrink = offer != null && worldSize < offer.size();
        byte[] id = new byte[0];
        if (rank == 0 && !mayShrink) {
            unjoined = nccl.newUniqueId();
            unjoinedEpoch = epoch;
            id = unjoined.toByteArray();
        }
        return new PlaneBinding("", id, offer);
    }

    /**
     * Ends the bootstrap root of the id made for an epoch dropped unformed: joined alone, it has
     * all the ranks it waits for. A failure is logged, not thrown: the next epoch does not need it.
     */
    private void endUnjoined() {
        NcclUniqueId id = unjoined;
        if (id == null) {
            return;
        }
        unjoined = null;
        try {
            nccl.join(id, 0, 1, timeoutNs).close();
        } catch (RuntimeException e) {
            LOG.warn(
                    "group epoch {}: could not end the NCCL bootstrap root of its unused unique id"
                            + " (a thread and a socket stay behind): {}",
                    unjoinedEpoch,
                    e.getMessage());
        }
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
        // joined here, or lost with a failed join (its root then waits for the members NCCL's
        // init missed as well)
        unjoined = null;
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

    /**
     * Drops the bound epoch, frees the communicator kept, and ends the bootstrap root of a unique
     * id made for an epoch that never formed.
     */
    @Override
    public void close() {
        drop();
        freeKept();
        endUnjoined();
    }
}
