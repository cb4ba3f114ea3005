package moe.a2a.gpu;

import java.util.stream.IntStream;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.SparseCommunicator;
import moe.a2a.comm.nccl.NcclCommunicator;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.jspecify.annotations.Nullable;

/**
 * What {@link GpuDispatcher} exchanges over: a communicator in the world's ranks for the counts and
 * the routes (NCCL's own, or a {@link SparseCommunicator} over NCCL's: a group serving without a
 * lost rank), and the NCCL communicator beneath it for the rows, which stay on the device. A sparse
 * group's per-peer arrays are the world's; NCCL takes its members' (a left-out rank's segment is
 * empty, so the buffers' offsets hold as they are). Owned by the rank's thread.
 */
final class DeviceGroup {
    private final Communicator world;
    private final NcclCommunicator nccl;
    private final @Nullable SparseCommunicator sparse;
    private final long[] memberSend;
    private final long[] memberRecv;

    /** Member {@code i}'s world rank. */
    private final int[] memberRanks;

    /** Where each member's segment starts in a buffer of every world rank's segments. */
    private final long[] memberOffsets;

    private DeviceGroup(
            Communicator world, NcclCommunicator nccl, @Nullable SparseCommunicator sparse) {
        this.world = world;
        this.nccl = nccl;
        this.sparse = sparse;
        this.memberSend = new long[nccl.size()];
        this.memberRecv = new long[nccl.size()];
        this.memberRanks =
                sparse != null ? sparse.ranks() : IntStream.range(0, nccl.size()).toArray();
        this.memberOffsets = new long[nccl.size()];
    }

    /** The device group {@code comm} exchanges over, or null when it runs on no NCCL group. */
    static @Nullable DeviceGroup of(Communicator comm) {
        if (comm instanceof NcclCommunicator nccl) {
            return new DeviceGroup(nccl, nccl, null);
        }
        if (comm instanceof SparseCommunicator s && s.members() instanceof NcclCommunicator nccl) {
            return new DeviceGroup(s, nccl, s);
        }
        return null;
    }

    /** This rank in the world. */
    int rank() {
        return world.rank();
    }

    /** The world's ranks. */
    int size() {
        return world.size();
    }

    /** The host-staged exchanges, in the world's ranks. */
    Communicator world() {
        return world;
    }

    /** The stream the rows move on: NCCL's. */
    CUstream_st stream() {
        return nccl.stream();
    }

    /**
     * {@link NcclCommunicator#enqueueAllToAllDevice} over buffers laid out for the world: world
     * rank {@code r}'s segment at {@code r * bytesPerPeer} in both. A sparse group exchanges its
     * members' segments; those of the ranks it leaves out are neither sent nor written.
     */
    void enqueueAllToAllDevice(
            long step, ExchangePhase phase, CudaMemory send, CudaMemory recv, long bytesPerPeer) {
        if (sparse == null) {
            nccl.enqueueAllToAllDevice(step, phase, send, recv, bytesPerPeer);
            return;
        }
        nccl.enqueueAllToAllDevice(step, phase, send, recv, bytesPerPeer, offsets(bytesPerPeer));
    }

    /** {@link NcclCommunicator#holdGraphs}. */
    void holdGraphs(Runnable drop) {
        nccl.holdGraphs(drop);
    }

    /** {@link NcclCommunicator#releaseGraphs}. */
    void releaseGraphs(Runnable drop) {
        nccl.releaseGraphs(drop);
    }

    /** {@link NcclCommunicator#capturing}. */
    void capturing(boolean open) {
        nccl.capturing(open);
    }

    /** {@link NcclCommunicator#awaitEnqueued}. */
    void awaitEnqueued(long step, ExchangePhase phase, String what) {
        nccl.awaitEnqueued(step, phase, what);
    }

    /** Each member's segment offset for world segments of {@code bytesPerPeer}; reused. */
    long[] offsets(long bytesPerPeer) {
        for (int i = 0; i < memberRanks.length; i++) {
            memberOffsets[i] = memberRanks[i] * bytesPerPeer;
        }
        return memberOffsets;
    }

    /**
     * {@link NcclCommunicator#allToAllVDevice} with per-peer byte counts of the world's ranks (zero
     * for the ranks a sparse group leaves out).
     */
    void allToAllVDevice(
            long step,
            ExchangePhase phase,
            CudaMemory send,
            long[] sendBytes,
            CudaMemory recv,
            long[] recvBytes) {
        SparseCommunicator s = sparse;
        if (s == null) {
            nccl.allToAllVDevice(step, phase, send, sendBytes, recv, recvBytes);
            return;
        }
        s.toMembers("sendBytes", sendBytes, memberSend);
        s.toMembers("recvBytes", recvBytes, memberRecv);
        nccl.allToAllVDevice(step, phase, send, memberSend, recv, memberRecv);
    }
}
