package moe.a2a.comm.local;

import moe.a2a.comm.DataPlane;
import moe.a2a.comm.PlaneSettings;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportProbe;
import moe.a2a.comm.TransportProvider;
import moe.a2a.comm.TransportReach;

/** The in-process transport: ranks are threads of one JVM ({@link LocalGroup}). */
public final class LocalTransportProvider implements TransportProvider {
    public static final Transport LOCAL = new Transport("local");

    @Override
    public Transport transport() {
        return LOCAL;
    }

    @Override
    public TransportReach reach() {
        return TransportReach.THREADS;
    }

    @Override
    public int order() {
        return 0;
    }

    @Override
    public TransportProbe probe(PlaneSettings settings) {
        return TransportProbe.USABLE;
    }

    @Override
    public DataPlane dataPlane(PlaneSettings settings) {
        throw new UnsupportedOperationException(
                "local: ranks are threads of one process (serve); a worker process cannot run it");
    }
}
