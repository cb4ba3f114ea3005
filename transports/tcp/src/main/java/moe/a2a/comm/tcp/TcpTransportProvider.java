package moe.a2a.comm.tcp;

import moe.a2a.comm.DataPlane;
import moe.a2a.comm.PlaneSettings;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportProbe;
import moe.a2a.comm.TransportProvider;
import moe.a2a.comm.TransportReach;

/** The TCP transport: ranks are processes on any hosts, one connection per pair (Netty). */
public final class TcpTransportProvider implements TransportProvider {
    public static final Transport TCP = new Transport("tcp");

    @Override
    public Transport transport() {
        return TCP;
    }

    @Override
    public TransportReach reach() {
        return TransportReach.NETWORK;
    }

    @Override
    public int order() {
        return 1;
    }

    @Override
    public TransportProbe probe(PlaneSettings settings) {
        return TransportProbe.USABLE;
    }

    @Override
    public DataPlane dataPlane(PlaneSettings settings) {
        PlaneSettings.TlsKeys tls = settings.tls();
        return TcpDataPlane.withOwnLoops(
                settings.ioThreads(),
                settings.dataHost(),
                settings.dataPort(),
                tls == null ? null : DataPlaneTls.of(tls));
    }
}
