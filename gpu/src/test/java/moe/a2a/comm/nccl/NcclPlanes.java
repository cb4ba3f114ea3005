package moe.a2a.comm.nccl;

import java.util.ArrayList;
import java.util.List;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.GroupEpoch;
import moe.a2a.comm.GroupPeers;
import moe.a2a.comm.GroupShrink;
import moe.a2a.comm.PlaneBinding;
import moe.a2a.comm.RankThreads;
import org.jspecify.annotations.Nullable;

/**
 * Workers' {@link NcclDataPlane}s over one {@link SimulatedNccl}, bound and formed epoch by epoch
 * as the control plane and the workers' group epochs drive them.
 */
final class NcclPlanes {
    final SimulatedNccl nccl = new SimulatedNccl();
    private final NcclDataPlane[] planes;

    NcclPlanes(int workers) {
        planes = new NcclDataPlane[workers];
        for (int w = 0; w < workers; w++) {
            planes[w] = new NcclDataPlane(nccl);
        }
    }

    /** Binds {@code members} (workers, in rank order) for {@code epoch}; their bindings. */
    List<PlaneBinding> bind(long epoch, int[] members, long timeoutNs) {
        List<PlaneBinding> bound = new ArrayList<>();
        for (int r = 0; r < members.length; r++) {
            bound.add(
                    planes[members[r]].bind(
                            new GroupEpoch(epoch, r, members.length, 100 + epoch, timeoutNs)));
        }
        return bound;
    }

    /**
     * Forms the epoch bound: each member on a thread of its own, from rank 0's token or by {@code
     * shrink}; the communicators in rank order.
     */
    Communicator[] form(
            long epoch, int[] members, List<PlaneBinding> bound, @Nullable GroupShrink shrink)
            throws Exception {
        GroupPeers peers = new GroupPeers(epoch, List.of(), bound.get(0).groupToken(), shrink);
        return RankThreads.run(members.length, r -> planes[members[r]].form(peers))
                .toArray(new Communicator[0]);
    }

    /** Frees the communicators {@code workers} kept, as PrepareGroup.nccl_afresh asks. */
    void freeKept(int[] workers) {
        for (int w : workers) {
            planes[w].freeKept();
        }
    }

    /** Closes the planes of {@code workers}, as a worker does at its end. */
    void close(int[] workers) {
        for (int w : workers) {
            planes[w].close();
        }
    }

    /** A barrier of {@code group}, each rank on a thread of its own. */
    static void barrier(Communicator[] group) throws Exception {
        RankThreads.run(
                group.length,
                r -> {
                    group[r].barrier();
                    return null;
                });
    }

    /** Drops a formed group as a worker does: aborted (between steps), then closed. */
    static void drop(Communicator[] group) {
        for (Communicator c : group) {
            c.abort(new A2aException("test: group epoch dropped"));
            c.close();
        }
    }
}
