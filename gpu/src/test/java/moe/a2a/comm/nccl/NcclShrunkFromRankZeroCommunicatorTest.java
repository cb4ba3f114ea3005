package moe.a2a.comm.nccl;

/** {@link NcclShrunkCommunicatorTest} with the parent's rank 0 left out: its rank 1 is rank 0. */
class NcclShrunkFromRankZeroCommunicatorTest extends NcclShrunkCommunicatorTest {
    @Override
    int excluded(int size) {
        return 0;
    }
}
