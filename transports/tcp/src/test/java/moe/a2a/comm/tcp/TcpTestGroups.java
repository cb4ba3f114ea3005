package moe.a2a.comm.tcp;

import java.util.ArrayList;
import java.util.List;
import moe.a2a.comm.Communicator;

/**
 * Groups of {@link TcpCommunicator}s on loopback whose ranks are threads of this JVM, for other
 * modules' tests: every group connected, all of them closed, with their transport, by {@link
 * #close}.
 */
public final class TcpTestGroups implements AutoCloseable {
    private final TcpTransport transport = new TcpTransport(2);
    private final List<TcpCommunicator> opened = new ArrayList<>();

    public Communicator[] open(int size, long timeoutNs) throws Exception {
        TcpCommunicator[] group = TcpCommunicatorTest.group(transport, size, timeoutNs);
        opened.addAll(List.of(group));
        return group;
    }

    @Override
    public void close() {
        for (TcpCommunicator c : opened) {
            c.close();
        }
        transport.close();
    }
}
