package moe.a2a.comm.nccl;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.List;
import moe.a2a.comm.AbstractCollectivesTest;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.RankThreads;
import moe.a2a.gpu.GpuLibraries;
import moe.a2a.gpu.GpuProbe;
import org.junit.jupiter.api.Tag;

/**
 * The collectives contract on real NCCL, one GPU per rank: runs only where the probe finds a usable
 * GPU (sizes beyond the device count are skipped, as NCCL refuses two ranks on one GPU).
 */
@Tag("gpu")
class CudaNcclCollectivesTest extends AbstractCollectivesTest {
    private static final GpuProbe.Result PROBE = GpuProbe.probe(GpuLibraries.resolve(null, null));

    @Override
    protected Communicator[] newGroup(int size, long timeoutNs) throws Exception {
        assumeTrue(PROBE.usable(), PROBE.describe());
        assumeTrue(
                size <= PROBE.devices(),
                size + " ranks need " + size + " GPUs; " + PROBE.describe());
        NcclUniqueId id = NcclCommunicator.newUniqueId();
        List<Communicator> comms =
                RankThreads.run(
                        size, rank -> NcclCommunicator.create(id, rank, size, rank, timeoutNs));
        return comms.toArray(new Communicator[0]);
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
