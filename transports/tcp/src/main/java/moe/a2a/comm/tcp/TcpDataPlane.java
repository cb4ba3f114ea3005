package moe.a2a.comm.tcp;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.DataPlane;
import moe.a2a.comm.GroupEpoch;
import moe.a2a.comm.GroupPeers;
import moe.a2a.comm.PlaneBinding;
import moe.a2a.comm.Transport;
import org.jspecify.annotations.Nullable;

/**
 * Over TCP: bind listens on the data port and reports its address; form connects to every peer's.
 * Owns its event loops ({@link TcpTransport}) when made by {@link TcpTransportProvider}.
 */
public final class TcpDataPlane implements DataPlane {
    private final TcpTransport transport;
    private final String dataHost;
    private final int dataPort;
    private final @Nullable DataPlaneTls tls;
    private final boolean ownsTransport;
    private @Nullable TcpCommunicator bound;

    /**
     * @param dataPort port to listen on; 0 picks a free one per epoch
     * @param tls mutual TLS between the workers, or null for plaintext
     */
    public TcpDataPlane(
            TcpTransport transport, String dataHost, int dataPort, @Nullable DataPlaneTls tls) {
        this(transport, dataHost, dataPort, tls, false);
    }

    private TcpDataPlane(
            TcpTransport transport,
            String dataHost,
            int dataPort,
            @Nullable DataPlaneTls tls,
            boolean ownsTransport) {
        this.ownsTransport = ownsTransport;
        this.transport = transport;
        this.dataHost = dataHost;
        this.dataPort = dataPort;
        this.tls = tls;
    }

    @Override
    public Transport transport() {
        return TcpTransportProvider.TCP;
    }

    @Override
    public String description() {
        return transport.description();
    }

    @Override
    public PlaneBinding bind(GroupEpoch epoch) {
        drop();
        TcpConfig config =
                new TcpConfig(
                        epoch.rank(),
                        epoch.worldSize(),
                        epoch.groupId(),
                        new InetSocketAddress(dataPort),
                        epoch.exchangeTimeoutNs(),
                        TcpConfig.DEFAULT_MAX_FRAME_BYTES,
                        tls);
        TcpCommunicator comm = TcpCommunicator.bind(transport, config);
        bound = comm;
        return PlaneBinding.at(dataHost + ":" + comm.localAddress().getPort());
    }

    @Override
    public Communicator form(GroupPeers peers) {
        TcpCommunicator comm = bound;
        if (comm == null) {
            throw new A2aException(
                    "form.epoch: " + peers.epoch() + " was never bound on this worker");
        }
        List<InetSocketAddress> addresses = new ArrayList<>();
        for (int i = 0; i < peers.addresses().size(); i++) {
            String peer = peers.addresses().get(i);
            int colon = peer.lastIndexOf(':');
            if (colon <= 0) {
                throw new IllegalArgumentException(
                        "form.peers[" + i + "]: " + peer + " (expected: host:port)");
            }
            addresses.add(
                    new InetSocketAddress(
                            peer.substring(0, colon), Integer.parseInt(peer.substring(colon + 1))));
        }
        bound = null;
        try {
            comm.connect(addresses);
        } catch (RuntimeException e) {
            comm.close();
            throw e;
        }
        return comm;
    }

    @Override
    public void drop() {
        TcpCommunicator comm = bound;
        if (comm != null) {
            bound = null;
            comm.close();
        }
    }

    /**
     * A data plane on event loops of its own ({@code ioThreads} of them), closed with it: a
     * worker's.
     */
    public static TcpDataPlane withOwnLoops(
            int ioThreads, String dataHost, int dataPort, @Nullable DataPlaneTls tls) {
        return new TcpDataPlane(new TcpTransport(ioThreads), dataHost, dataPort, tls, true);
    }

    @Override
    public void close() {
        drop();
        if (ownsTransport) {
            transport.close();
        }
    }
}
