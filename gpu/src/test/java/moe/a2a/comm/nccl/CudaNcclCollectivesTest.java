package moe.a2a.comm.nccl;

import moe.a2a.comm.AbstractCollectivesTest;
import moe.a2a.comm.Communicator;
import org.junit.jupiter.api.Tag;

/**
 * The collectives contract on real NCCL, one GPU per rank: runs only where the probe finds a usable
 * GPU (sizes beyond the device count are skipped, as NCCL refuses two ranks on one GPU).
 */
@Tag("gpu")
class CudaNcclCollectivesTest extends AbstractCollectivesTest {
    @Override
    protected Communicator[] newGroup(int size, long timeoutNs) throws Exception {
        return CudaNcclGroups.create(size, timeoutNs);
    }

    @Override
    protected boolean namesMissingPeer() {
        return false;
    }

    @Override
    protected boolean propagatesAbort() {
        return false;
    }
}
