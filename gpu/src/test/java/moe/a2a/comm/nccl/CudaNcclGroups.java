package moe.a2a.comm.nccl;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.List;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.RankThreads;
import moe.a2a.gpu.GpuLibraries;
import moe.a2a.gpu.GpuProbe;

/**
 * Real NCCL groups for the GPU-tagged contract tests; skipped where the probe finds too few GPUs.
 */
final class CudaNcclGroups {
    private static final GpuProbe.Result PROBE = GpuProbe.probe(GpuLibraries.resolve(null, null));

    private CudaNcclGroups() {}

    /** One communicator per GPU, rank r on device r; the test is skipped if that cannot be. */
    static Communicator[] create(int size, long timeoutNs) throws Exception {
        assumeTrue(PROBE.usable(), PROBE.describe());
        assumeTrue(
                size <= PROBE.devices(),
                size + " ranks need " + size + " GPUs; " + PROBE.describe());
        NcclUniqueId id = NcclCommunicator.newUniqueId();
        // Every rank must be joining at once: ncclCommInitRank waits for the others.
        List<Communicator> comms =
                RankThreads.run(
                        size, rank -> NcclCommunicator.create(id, rank, size, rank, timeoutNs));
        return comms.toArray(new Communicator[0]);
    }
}
