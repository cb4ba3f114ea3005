package moe.a2a.worker;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.Transport;
import moe.a2a.comm.tcp.DataPlaneTls;
import moe.a2a.comm.tcp.TcpCommunicator;
import moe.a2a.comm.tcp.TcpConfig;
import moe.a2a.comm.tcp.TcpTransport;
import moe.a2a.v1.Bound;
import moe.a2a.v1.FormGroup;
import moe.a2a.v1.PrepareGroup;
import org.jspecify.annotations.Nullable;

/**
 * Over TCP: bind listens on the data port and reports its address; form connects to every peer's.
 */
public final class TcpDataPlane implements DataPlane {
    private final TcpTransport transport;
    private final String dataHost;
    private final int dataPort;
    private final @Nullable DataPlaneTls tls;
    private @Nullable TcpCommunicator bound;

    /**
     * @param dataPort port to listen on; 0 picks a free one per epoch
     * @param tls mutual TLS between the workers, or null for plaintext
     */
    public TcpDataPlane(
            TcpTransport transport, String dataHost, int dataPort, @Nullable DataPlaneTls tls) {
        this.transport = transport;
        this.dataHost = dataHost;
        this.dataPort = dataPort;
        this.tls = tls;
    }

    @Override
    public Transport transport() {
        return Transport.TCP;
    }

    @Override
    public Bound bind(int rank, int worldSize, PrepareGroup prepare) {
        drop();
        TcpConfig config =
                new TcpConfig(
                        rank,
                        worldSize,
                        prepare.getGroupId(),
                        new InetSocketAddress(dataPort),
                        TimeUnit.MILLISECONDS.toNanos(prepare.getExchangeTimeoutMs()),
                        TcpConfig.DEFAULT_MAX_FRAME_BYTES,
                        tls);
        TcpCommunicator comm = TcpCommunicator.bind(transport, config);
        bound = comm;
        return Bound.newBuilder()
                .setEpoch(prepare.getEpoch())
                .setDataAddress(dataHost + ":" + comm.localAddress().getPort())
                .build();
    }

    @Override
    public Communicator form(FormGroup form) {
        TcpCommunicator comm = bound;
        if (comm == null) {
            throw new A2aException(
                    "form.epoch: " + form.getEpoch() + " was never bound on this worker");
        }
        List<InetSocketAddress> addresses = new ArrayList<>();
        for (int i = 0; i < form.getPeersCount(); i++) {
            String peer = form.getPeers(i);
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
        comm.connect(addresses);
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

    @Override
    public void close() {
        drop();
    }
}
