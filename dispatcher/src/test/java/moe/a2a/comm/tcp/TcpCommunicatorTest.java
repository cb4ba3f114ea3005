package moe.a2a.comm.tcp;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import moe.a2a.comm.AbstractCommunicatorTest;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.RankThreads;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

class TcpCommunicatorTest extends AbstractCommunicatorTest {
    static TcpTransport transport;

    @BeforeAll
    static void startTransport() {
        transport = new TcpTransport(2);
    }

    @AfterAll
    static void stopTransport() {
        transport.close();
    }

    @Override
    protected Communicator[] newGroup(int size, long timeoutNs) throws Exception {
        return group(transport, size, timeoutNs);
    }

    /** {@code size} ranks on loopback, connected to each other. */
    static TcpCommunicator[] group(TcpTransport transport, int size, long timeoutNs)
            throws Exception {
        long groupId = ThreadLocalRandom.current().nextLong();
        TcpCommunicator[] comms = new TcpCommunicator[size];
        List<InetSocketAddress> addresses = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            comms[r] =
                    TcpCommunicator.bind(
                            transport,
                            new TcpConfig(
                                    r,
                                    size,
                                    groupId,
                                    new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                                    timeoutNs,
                                    TcpConfig.DEFAULT_MAX_FRAME_BYTES));
            addresses.add(comms[r].localAddress());
        }
        RankThreads.run(
                size,
                rank -> {
                    comms[rank].connect(addresses);
                    return rank;
                });
        return comms;
    }
}
