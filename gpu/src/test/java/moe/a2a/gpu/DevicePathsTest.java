package moe.a2a.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.RankThreads;
import moe.a2a.comm.SparseCommunicator;
import moe.a2a.comm.local.LocalGroup;
import moe.a2a.comm.nccl.FakeNcclGroup;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The members of an NCCL group decide together whether all run their steps on the device: one on
 * the host path puts them all there. Every member must get the same answer, computed here from the
 * flags themselves; a group on another transport exchanges nothing.
 */
class DevicePathsTest {
    @ParameterizedTest
    @CsvSource({"111", "101", "000", "0111", "1", "0"})
    void shouldAgreeOverNccl(String flags) throws Exception {
        int n = flags.length();
        Communicator[] group = FakeNcclGroup.group(n, TimeUnit.SECONDS.toNanos(30));
        boolean expected = !flags.contains("0");
        List<Boolean> answers =
                RankThreads.run(
                        n, r -> DevicePaths.everyMemberOnDevice(group[r], flags.charAt(r) == '1'));
        assertThat(answers).containsOnly(expected).hasSize(n);
    }

    /** A sparse group (world rank 1 of 3 lost) decides among its members. */
    @ParameterizedTest
    @CsvSource({"11, true", "10, false"})
    void shouldAgreeAmongASparseGroupsMembers(String flags, boolean expected) throws Exception {
        int[] ranks = {0, 2};
        Communicator[] members = FakeNcclGroup.group(2, TimeUnit.SECONDS.toNanos(30));
        List<Boolean> answers =
                RankThreads.run(
                        2,
                        m ->
                                DevicePaths.everyMemberOnDevice(
                                        new SparseCommunicator(members[m], ranks, 3),
                                        flags.charAt(m) == '1'));
        assertThat(answers).containsOnly(expected).hasSize(2);
    }

    /** Over another transport each member keeps its own answer: nothing is exchanged. */
    @ParameterizedTest
    @CsvSource({"true", "false"})
    void shouldKeepItsOwnAnswerOffNccl(boolean onDevice) {
        LocalGroup group = new LocalGroup(2);
        assertThat(DevicePaths.everyMemberOnDevice(group.communicator(0), onDevice))
                .isEqualTo(onDevice);
    }
}
