package moe.a2a.comm.nccl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.GroupShrink;
import moe.a2a.comm.PlaneBinding;
import moe.a2a.comm.RankThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code ncclCommShrink} as the simulated NCCL runs it, strictly, and the parent's lifetime in
 * {@link NcclDataPlane}: kept through an abort between steps, never through one mid-exchange.
 */
@Timeout(60)
class NcclShrinkTest {
    static final long TIMEOUT_NS = TimeUnit.SECONDS.toNanos(10);

    @Test
    void shouldFailEverySurvivorWhenExclusionListsDiffer() throws Exception {
        NcclCommunicator[] parent = parent(4, TIMEOUT_NS);
        int[][] excluded = {{3}, {2}};
        List<Throwable> failures =
                RankThreads.run(
                        2,
                        r -> {
                            try {
                                parent[r].shrink(excluded[r], TimeUnit.SECONDS.toNanos(2));
                                return null;
                            } catch (A2aException e) {
                                return e;
                            }
                        });
        for (Throwable failure : failures) {
            assertThat(failure)
                    .isInstanceOf(A2aException.class)
                    .hasMessageContaining("ncclCommShrink")
                    // whichever rank came first, both lists are named
                    .hasMessageContaining("excluded")
                    .hasMessageContaining("[2]")
                    .hasMessageContaining("[3]");
        }
    }

    @Test
    void shouldFailWhenAnExcludedRankCallsShrink() {
        NcclCommunicator[] parent = parent(3, TIMEOUT_NS);
        assertThatThrownBy(() -> parent[1].shrink(new int[] {1}, TIMEOUT_NS))
                .isInstanceOf(A2aException.class)
                .hasMessageContaining("ncclInvalidArgument")
                .hasMessageContaining("an excluded rank");
    }

    @Test
    void shouldRefuseToShrinkWhenParentWasAbortedMidExchange() {
        NcclCommunicator[] parent = parent(2, TimeUnit.MILLISECONDS.toNanos(50));
        assertThatThrownBy(parent[0]::barrier).isInstanceOf(A2aException.class);
        assertThat(parent[0].canShrink()).isFalse();
        assertThatThrownBy(() -> parent[0].shrink(new int[] {1}, TIMEOUT_NS))
                .isInstanceOf(A2aException.class)
                .hasMessageContaining("aborted=true");
    }

    @Test
    void shouldKeepIdleCommunicatorIntactWhenAbortedBetweenSteps() throws Exception {
        NcclCommunicator[] parent = parent(2, TIMEOUT_NS);
        NcclPlanes.barrier(parent);
        for (NcclCommunicator c : parent) {
            c.abort(new A2aException("test: dropped between steps"));
            assertThat(c.canShrink()).isTrue();
        }
        assertThatThrownBy(parent[0]::barrier)
                .isInstanceOf(A2aException.class)
                .hasMessageContaining("broken");
    }

    @Test
    void shouldRefuseParentOnceShrunk() throws Exception {
        NcclCommunicator[] parent = parent(3, TIMEOUT_NS);
        List<Communicator> shrunk =
                RankThreads.run(2, r -> parent[r].shrink(new int[] {2}, TIMEOUT_NS));
        assertThat(shrunk).extracting(Communicator::size).containsExactly(2, 2);
        assertThat(parent[0].canShrink()).isFalse();
        assertThatThrownBy(parent[0]::barrier)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("after ncclCommShrink");
        RankThreads.run(
                2,
                r -> {
                    shrunk.get(r).barrier();
                    return null;
                });
    }

    @Test
    void shouldRejectShrinkWhenWorkerHoldsNoParent() throws Exception {
        NcclPlanes planes = new NcclPlanes(2);
        int[] both = {0, 1};
        List<PlaneBinding> bound = planes.bind(1, both, TIMEOUT_NS);
        assertThat(bound).extracting(PlaneBinding::parent).containsOnlyNulls();
        assertThatThrownBy(() -> planes.form(1, both, bound, new GroupShrink(0, new int[] {2})))
                .hasMessageContaining("form.nccl_shrink")
                .hasMessageContaining("holds no parent");
    }

    @Test
    void shouldRejectShrinkOfAnotherParentEpoch() throws Exception {
        NcclPlanes planes = new NcclPlanes(3);
        int[] all = {0, 1, 2};
        NcclPlanes.drop(planes.form(1, all, planes.bind(1, all, TIMEOUT_NS), null));
        int[] two = {0, 1};
        List<PlaneBinding> bound = planes.bind(2, two, TIMEOUT_NS);
        assertThatThrownBy(() -> planes.form(2, two, bound, new GroupShrink(7, new int[] {2})))
                .hasMessageContaining("form.nccl_shrink.parent_epoch: 7 (expected: 1");
    }

    @Test
    void shouldFormAfreshAndFreeParentWhenGroupGrows() throws Exception {
        NcclPlanes planes = new NcclPlanes(3);
        int[] two = {0, 1};
        NcclPlanes.drop(planes.form(1, two, planes.bind(1, two, TIMEOUT_NS), null));
        int[] all = IntStream.range(0, 3).toArray();
        List<PlaneBinding> bound = planes.bind(2, all, TIMEOUT_NS);
        assertThat(bound.get(2).parent()).isNull();
        Communicator[] grown = planes.form(2, all, bound, null);
        NcclPlanes.barrier(grown);
        assertThat(planes.bind(3, two, TIMEOUT_NS))
                .as("epoch 2's communicators are the parents now")
                .allSatisfy(b -> assertThat(b.parent().epoch()).isEqualTo(2));
    }

    /**
     * Rank 0 makes a unique id only where no shrink can follow: none where its parent is larger
     * than the group (NCCL's bootstrap root behind an id nobody joins waits for good), one where it
     * is not, and one once its parent is freed to form afresh, from which the group forms.
     */
    @Test
    void shouldMakeAUniqueIdOnlyWhereNoShrinkCanFollow() throws Exception {
        NcclPlanes planes = new NcclPlanes(3);
        int[] all = {0, 1, 2};
        NcclPlanes.drop(planes.form(1, all, planes.bind(1, all, TIMEOUT_NS), null));
        int[] two = {0, 1};
        List<PlaneBinding> smaller = planes.bind(2, two, TIMEOUT_NS);
        assertThat(smaller.get(0).groupToken()).as("a shrink may follow").isEmpty();
        assertThat(smaller.get(0).parent()).isNotNull();
        assertThat(planes.bind(3, all, TIMEOUT_NS).get(0).groupToken())
                .as("a group as large as the parent")
                .hasSize(128);
        assertThat(planes.nccl.madeIds()).hasSize(2);

        planes.freeKept(two);
        List<PlaneBinding> afresh = planes.bind(4, two, TIMEOUT_NS);
        assertThat(afresh).extracting(PlaneBinding::parent).containsOnlyNulls();
        assertThat(afresh.get(0).groupToken()).hasSize(128);
        Communicator[] formed = planes.form(4, two, afresh, null);
        NcclPlanes.barrier(formed);
        NcclPlanes.drop(formed);
        assertThat(planes.nccl.openRoots())
                .as("epoch 3's id, made and dropped unformed, was joined by rank 0 alone")
                .isEmpty();
    }

    /**
     * A unique id made for an epoch dropped before it formed (NCCL's bootstrap root behind it
     * waiting for good) is joined by rank 0 alone at its next bind, or when its plane closes; an id
     * its group joined is left alone.
     */
    @Test
    void shouldEndTheBootstrapRootOfAnIdMadeForAnEpochThatNeverFormed() throws Exception {
        NcclPlanes planes = new NcclPlanes(3);
        int[] all = {0, 1, 2};
        planes.bind(1, all, TIMEOUT_NS);
        assertThat(planes.nccl.openRoots()).as("epoch 1, bound").hasSize(1);

        List<PlaneBinding> bound = planes.bind(2, all, TIMEOUT_NS);
        assertThat(planes.nccl.madeIds()).hasSize(2);
        assertThat(planes.nccl.openRoots())
                .as("epoch 1's root ended, epoch 2's open until its group joins it")
                .containsExactly(planes.nccl.madeIds().get(1));
        Communicator[] formed = planes.form(2, all, bound, null);
        NcclPlanes.barrier(formed);
        assertThat(planes.nccl.openRoots()).isEmpty();
        NcclPlanes.drop(formed);

        planes.bind(3, all, TIMEOUT_NS);
        assertThat(planes.nccl.openRoots()).hasSize(1);
        planes.close(all);
        assertThat(planes.nccl.openRoots()).as("closed with epoch 3 bound").isEmpty();
        assertThat(planes.nccl.madeIds()).hasSize(3);
    }

    private static NcclCommunicator[] parent(int size, long timeoutNs) {
        FakeNcclGroup group = new FakeNcclGroup(size);
        NcclCommunicator[] comms = new NcclCommunicator[size];
        for (int r = 0; r < size; r++) {
            comms[r] = group.communicator(r, timeoutNs);
        }
        return comms;
    }
}
