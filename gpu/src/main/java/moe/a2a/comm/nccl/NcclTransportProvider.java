package moe.a2a.comm.nccl;

import moe.a2a.comm.DataPlane;
import moe.a2a.comm.PlaneSettings;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportProbe;
import moe.a2a.comm.TransportProvider;
import moe.a2a.comm.TransportReach;
import moe.a2a.gpu.GpuLibraries;
import moe.a2a.gpu.GpuProbe;

/** NCCL: ranks are GPUs, each rank's rows and experts on its device. */
public final class NcclTransportProvider implements TransportProvider {
    public static final Transport NCCL = new Transport("nccl");

    @Override
    public Transport transport() {
        return NCCL;
    }

    @Override
    public TransportReach reach() {
        return TransportReach.DEVICES;
    }

    @Override
    public int order() {
        return 2;
    }

    /** Loads CUDA and NCCL from where the settings say, and says what it found. */
    @Override
    public TransportProbe probe(PlaneSettings settings) {
        GpuProbe.Result probe =
                GpuProbe.probe(GpuLibraries.resolve(settings.cudaLibDir(), settings.ncclLibDir()));
        return new TransportProbe(probe.usable(), probe.describe());
    }

    @Override
    public DataPlane dataPlane(PlaneSettings settings) {
        return NcclDataPlane.onDevice(settings.device());
    }
}
