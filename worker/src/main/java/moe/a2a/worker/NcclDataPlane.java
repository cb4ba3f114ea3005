package moe.a2a.worker;

import com.google.protobuf.ByteString;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.Transport;
import moe.a2a.comm.nccl.NcclCommunicator;
import moe.a2a.comm.nccl.NcclUniqueId;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankRuntime;
import moe.a2a.experts.WeightSource;
import moe.a2a.gpu.GpuRankRuntime;
import moe.a2a.v1.Bound;
import moe.a2a.v1.FormGroup;
import moe.a2a.v1.PrepareGroup;

/**
 * Over NCCL: on bind, rank 0 makes the group's {@code ncclUniqueId} and reports it in Bound (the
 * control plane hands it to every rank in FormGroup); form joins the NCCL group with it. Where the
 * NCCL pieces come from is a {@link NcclProvider}: {@link #onDevice} for a real GPU (the rank then
 * runs on it, {@link GpuRankRuntime}), a simulation in tests.
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

        /** The runtime of {@code rank}. */
        RankRuntime runtime(ModelConfig model, WeightSource weights, Placement placement, int rank);
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
     * NCCL and the rank's runtime on CUDA device {@code device}. Needs a usable GPU ({@link
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

                    /**
                     * bf16 steps with rows in device memory; other dtypes on the CPU path over the
                     * same NCCL group.
                     */
                    @Override
                    public RankRuntime runtime(
                            ModelConfig model,
                            WeightSource weights,
                            Placement placement,
                            int rank) {
                        return new GpuRankRuntime(model, weights, placement, rank, device);
                    }
                });
    }

    @Override
    public Transport transport() {
        return Transport.NCCL;
    }

    @Override
    public Bound bind(int rank, int worldSize, PrepareGroup prepare) {
        this.rank = rank;
        this.worldSize = worldSize;
        this.timeoutNs = TimeUnit.MILLISECONDS.toNanos(prepare.getExchangeTimeoutMs());
        this.epoch = prepare.getEpoch();
        Bound.Builder bound = Bound.newBuilder().setEpoch(prepare.getEpoch());
        if (rank == 0) {
            bound.setNcclUniqueId(ByteString.copyFrom(nccl.newUniqueId().toByteArray()));
        }
        return bound.build();
    }

    @Override
    public Communicator form(FormGroup form) {
        if (form.getEpoch() != epoch) {
            throw new IllegalStateException(
                    "form.epoch: "
                            + form.getEpoch()
                            + " (expected: "
                            + epoch
                            + ", the epoch this worker bound)");
        }
        NcclUniqueId id =
                NcclUniqueId.of(form.getNcclUniqueId().toByteArray(), "form.nccl_unique_id");
        epoch = -1;
        return nccl.join(id, rank, worldSize, timeoutNs);
    }

    @Override
    public RankRuntime runtime(
            ModelConfig model, WeightSource weights, Placement placement, int rank) {
        return nccl.runtime(model, weights, placement, rank);
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
