package moe.a2a.comm.nccl;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.stream.IntStream;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.GroupShrink;
import moe.a2a.comm.ParentGroup;
import moe.a2a.comm.PlaneBinding;

/**
 * The communicator contract on NCCL communicators that their data planes shrank ({@code
 * ncclCommShrink}, simulated) from a group one rank larger, dropped between steps: rank {@link
 * #excluded} of it is left out, and every other keeps its order.
 */
class NcclShrunkCommunicatorTest extends NcclCommunicatorTest {
    /** The parent rank left out: one in the middle (the last, of two). */
    int excluded(int size) {
        return (size + 1) / 2;
    }

    @Override
    protected Communicator[] newGroup(int size, long timeoutNs) throws Exception {
        int parentSize = size + 1;
        int left = excluded(size);
        NcclPlanes planes = new NcclPlanes(parentSize);
        int[] all = IntStream.range(0, parentSize).toArray();
        NcclPlanes.drop(planes.form(1, all, planes.bind(1, all, timeoutNs), null));
        int[] survivors = IntStream.range(0, parentSize).filter(w -> w != left).toArray();
        List<PlaneBinding> bound = planes.bind(2, survivors, timeoutNs);
        for (int r = 0; r < survivors.length; r++) {
            assertThat(bound.get(r).parent())
                    .as("worker %d's parent", survivors[r])
                    .isEqualTo(new ParentGroup(1, 101, survivors[r], parentSize));
        }
        Communicator[] group =
                planes.form(2, survivors, bound, new GroupShrink(1, new int[] {left}));
        assertThat(planes.nccl.shrinks()).hasSize(size).containsOnly(List.of(left));
        assertThat(planes.nccl.groupIds()).as("no fresh init after the first").hasSize(1);
        for (int r = 0; r < size; r++) {
            assertThat(group[r].rank()).isEqualTo(r);
            assertThat(group[r].size()).isEqualTo(size);
        }
        return group;
    }
}
