package moe.a2a.gpu;

import java.nio.ByteBuffer;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.SparseCommunicator;
import moe.a2a.comm.nccl.NcclCommunicator;

/**
 * Whether every member of an NCCL group runs its steps on the device. A member on the host path (a
 * GPU rank whose device could not hold its experts) exchanges otherwise: counts, rows with their
 * routes, combine, where the device path exchanges counts, routes, rows, combine, and the
 * low-latency layouts differ too. So one member on the host path puts every member of its group
 * there, which the members decide together once the group has formed.
 */
public final class DevicePaths {
    private DevicePaths() {}

    /**
     * Over an NCCL group ({@code group}, or the members of a sparse one): gathers every member's
     * {@code onDevice} and returns whether all are true. Every member calls it, once the group has
     * formed and before its first step. Over any other transport it returns {@code onDevice},
     * exchanging nothing.
     */
    public static boolean everyMemberOnDevice(Communicator group, boolean onDevice) {
        Communicator members = group instanceof SparseCommunicator s ? s.members() : group;
        if (!(members instanceof NcclCommunicator)) {
            return onDevice;
        }
        ByteBuffer mine = ByteBuffer.allocate(1).put(0, (byte) (onDevice ? 1 : 0));
        ByteBuffer all = ByteBuffer.allocate(members.size());
        members.allGather(mine, all, 1);
        for (int r = 0; r < members.size(); r++) {
            if (all.get(r) == 0) {
                return false;
            }
        }
        return true;
    }
}
