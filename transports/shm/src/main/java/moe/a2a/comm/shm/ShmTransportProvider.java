package moe.a2a.comm.shm;

import moe.a2a.comm.DataPlane;
import moe.a2a.comm.PlaneSettings;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportProbe;
import moe.a2a.comm.TransportProvider;
import moe.a2a.comm.TransportReach;

/**
 * The shared-memory transport: ranks are processes of one host that map each other's files in one
 * directory ({@link ShmCommunicator}).
 */
public final class ShmTransportProvider implements TransportProvider {
    public static final Transport SHM = new Transport("shm");

    @Override
    public Transport transport() {
        return SHM;
    }

    @Override
    public TransportReach reach() {
        return TransportReach.HOST;
    }

    @Override
    public int order() {
        return 3;
    }

    /** Usable when the directory can hold a group's files; else says why, naming its flag. */
    @Override
    public TransportProbe probe(PlaneSettings settings) {
        String why = ShmDataPlane.unusable(settings.shmDir());
        return why == null ? TransportProbe.USABLE : TransportProbe.unusable("--shm-dir: " + why);
    }

    @Override
    public DataPlane dataPlane(PlaneSettings settings) {
        return new ShmDataPlane(settings.shmDir());
    }
}
