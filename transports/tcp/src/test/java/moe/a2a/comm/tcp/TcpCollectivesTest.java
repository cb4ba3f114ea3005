package moe.a2a.comm.tcp;

import java.util.ArrayList;
import java.util.List;
import moe.a2a.comm.AbstractCollectivesTest;
import moe.a2a.comm.Communicator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;

/** The collectives and point-to-point contract over TCP on loopback. */
class TcpCollectivesTest extends AbstractCollectivesTest {
    static TcpTransport transport;

    private final List<TcpCommunicator> opened = new ArrayList<>();

    @BeforeAll
    static void startTransport() {
        transport = new TcpTransport(2);
    }

    @AfterAll
    static void stopTransport() {
        transport.close();
    }

    @AfterEach
    void closeGroups() {
        for (TcpCommunicator c : opened) {
            c.close();
        }
        opened.clear();
    }

    @Override
    protected Communicator[] newGroup(int size, long timeoutNs) throws Exception {
        TcpCommunicator[] group = TcpCommunicatorTest.group(transport, size, timeoutNs);
        opened.addAll(List.of(group));
        return group;
    }
}
