package moe.a2a.comm.nccl;

import moe.a2a.comm.Communicator;
import moe.a2a.comm.DataPlane;
import moe.a2a.comm.GroupEpoch;
import moe.a2a.comm.GroupPeers;
import moe.a2a.comm.PlaneBinding;
import moe.a2a.comm.Transport;

/**
 * Over NCCL: on bind, rank 0 makes the group's {@code ncclUniqueId} and reports it as the group's
 * token (the control plane hands it to every rank); form joins the NCCL group with it. Where the
 * NCCL pieces come from is a {@link NcclProvider}: {@link #onDevice} for a real GPU (the rank then
 * runs on it: {@link #device}), a simulation in tests.
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
        Communicator join(NcclUniqueId id, int rank, int worldSize, long timeoutNs);

        /** The CUDA device the rank's rows stay on, or -1 when the rank runs on the host. */
        int device();
    }

    private final NcclProvider nccl;
    private int rank = -1;
    private int worldSize;
    private long timeoutNs;
    private long epoch = -1;

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
                    public Communicator join(
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
        return rank == 0
                ? new PlaneBinding("", nccl.newUniqueId().toByteArray())
                : PlaneBinding.NONE;
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
        NcclUniqueId id = NcclUniqueId.of(peers.groupToken(), "form.nccl_unique_id");
        epoch = -1;
        return nccl.join(id, rank, worldSize, timeoutNs);
    }

    @Override
    public void drop() {
        epoch = -1;
    }

    @Override
    public void close() {
        drop();
    }
}
