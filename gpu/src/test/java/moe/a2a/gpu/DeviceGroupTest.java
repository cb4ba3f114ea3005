package moe.a2a.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.TimeUnit;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.SparseCommunicator;
import moe.a2a.comm.local.LocalGroup;
import moe.a2a.comm.nccl.FakeNcclGroup;
import org.junit.jupiter.api.Test;

/**
 * Which communicators a GPU rank's dispatcher runs on: NCCL's, and a sparse group over NCCL's (a
 * cluster serving without a lost rank) seen in the world's ranks; nothing else. A sparse group's
 * device exchange refuses a count for a rank it left out, before any row moves, and its fixed-size
 * exchanges take the members' segments of buffers laid out for the world.
 */
class DeviceGroupTest {
    private static final long TIMEOUT_NS = TimeUnit.SECONDS.toNanos(10);

    @Test
    void shouldRunOnNcclAndOnASparseGroupOverNcclInTheWorldsRanks() {
        Communicator[] members = FakeNcclGroup.group(2, TIMEOUT_NS);
        DeviceGroup full = DeviceGroup.of(members[1]);
        assertThat(full).isNotNull();
        assertThat(full.rank()).isEqualTo(1);
        assertThat(full.size()).isEqualTo(2);

        // world ranks 0 and 2 of 3 serve; rank 1 was lost
        DeviceGroup sparse =
                DeviceGroup.of(new SparseCommunicator(members[1], new int[] {0, 2}, 3));
        assertThat(sparse).isNotNull();
        assertThat(sparse.rank()).isEqualTo(2);
        assertThat(sparse.size()).isEqualTo(3);
        assertThat(sparse.world().size()).isEqualTo(3);
        assertThat(full.offsets(100))
                .as("every rank's segment where the world puts it")
                .containsExactly(0, 100);
        assertThat(sparse.offsets(100))
                .as("the members' segments of a buffer laid out for the world's three ranks")
                .containsExactly(0, 200);
        assertThatThrownBy(
                        () ->
                                sparse.allToAllVDevice(
                                        0,
                                        ExchangePhase.DISPATCH,
                                        CudaMemory.device(),
                                        new long[] {0, 8, 0},
                                        CudaMemory.device(),
                                        new long[] {0, 0, 0}))
                .isInstanceOf(A2aException.class)
                .hasMessageContaining("sendBytes[1]")
                .hasMessageContaining("not in the group of ranks [0, 2]");
        for (Communicator c : members) {
            c.close();
        }
    }

    @Test
    void shouldRunOnNoOtherCommunicator() {
        Communicator local = new LocalGroup(2).communicator(0);
        assertThat(DeviceGroup.of(local)).isNull();
        assertThat(DeviceGroup.of(new SparseCommunicator(local, new int[] {0, 1}, 3))).isNull();
    }
}
