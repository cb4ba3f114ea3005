package moe.a2a.cli;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.Transport;
import moe.a2a.comm.shm.ShmCommunicator;
import moe.a2a.comm.shm.ShmConfig;
import moe.a2a.comm.tcp.TcpCommunicator;
import moe.a2a.comm.tcp.TcpConfig;
import moe.a2a.comm.tcp.TcpTransport;

/**
 * How a bench child process ({@code bench-rank}, {@code bench-collective-rank}) joins its group of
 * sibling processes: over tcp by publishing its loopback port as a file in the run's folder and
 * waiting for every rank's, over shm through the shared-memory directory ({@code /dev/shm}) under
 * the run's group id.
 */
final class ChildRankGroup {
    /** The transports a bench child process can run. */
    static final List<Transport> TRANSPORTS = List.of(Transport.TCP, Transport.SHM);

    /** How long a bench child waits for its siblings, and each exchange for its peers. */
    static final long TIMEOUT_NS = TimeUnit.SECONDS.toNanos(120);

    private ChildRankGroup() {}

    /** What a rank does once it has joined its group. */
    @FunctionalInterface
    interface RankBody {
        void run(Communicator comm) throws Exception;
    }

    /**
     * Joins the group as {@code rank} of {@code n} ({@link #join}), runs {@code body} on it and
     * leaves once every rank is done ({@link #finish}).
     */
    static void run(Transport transport, int rank, int n, long groupId, Path dir, RankBody body)
            throws Exception {
        try (TcpTransport tcp = new TcpTransport(1)) {
            Communicator comm = join(transport, rank, n, groupId, dir, TIMEOUT_NS, tcp);
            body.run(comm);
            finish(comm, dir, rank, n, TIMEOUT_NS);
        }
    }

    /**
     * Joins the group as {@code rank} of {@code n}; the communicator is the caller's to close.
     *
     * @param tcp the event loops of a tcp group; unused over shm
     */
    private static Communicator join(
            Transport transport,
            int rank,
            int n,
            long groupId,
            Path dir,
            long timeoutNs,
            TcpTransport tcp)
            throws Exception {
        if (transport == Transport.SHM) {
            return ShmCommunicator.open(new ShmConfig(rank, n, groupId, timeoutNs));
        }
        if (transport != Transport.TCP) {
            throw new IllegalArgumentException(
                    "--transport: "
                            + transport
                            + " (expected: "
                            + Transport.labels(TRANSPORTS.toArray(Transport[]::new))
                            + ")");
        }
        return tcp(tcp, rank, n, groupId, InetAddress.getLoopbackAddress(), dir, "rank", timeoutNs);
    }

    /**
     * Joins a tcp group as {@code rank} of {@code n}, listening on {@code address}: publishes
     * {@code <name>-<rank>.addr} (address and port) in the run's folder and waits for every rank's;
     * the communicator is the caller's to close.
     */
    static TcpCommunicator tcp(
            TcpTransport tcp,
            int rank,
            int n,
            long groupId,
            InetAddress address,
            Path dir,
            String name,
            long timeoutNs)
            throws Exception {
        TcpCommunicator comm =
                TcpCommunicator.bind(
                        tcp,
                        new TcpConfig(
                                rank,
                                n,
                                groupId,
                                new InetSocketAddress(address, 0),
                                timeoutNs,
                                TcpConfig.DEFAULT_MAX_FRAME_BYTES));
        try {
            PublishedFiles.publish(
                    dir.resolve(name + "-" + rank + ".addr"),
                    address.getHostAddress() + " " + comm.localAddress().getPort());
            List<InetSocketAddress> peers = new ArrayList<>();
            long deadline = System.nanoTime() + timeoutNs;
            for (int r = 0; r < n; r++) {
                int peer = r;
                Path published =
                        PublishedFiles.await(
                                dir.resolve(name + "-" + r + ".addr"),
                                deadline,
                                20,
                                () -> name + " rank " + peer + " never published its address");
                String[] hostPort = Files.readString(published).trim().split(" ");
                peers.add(
                        new InetSocketAddress(
                                InetAddress.getByName(hostPort[0]), Integer.parseInt(hostPort[1])));
            }
            comm.connect(peers);
            return comm;
        } catch (Exception | Error e) {
            comm.close();
            throw e;
        }
    }

    /**
     * Leaves the group once every rank is done: a barrier, then a {@code rank-<r>.done} file in the
     * run's folder, then a wait for every rank's before closing. Closing a shared-memory
     * communicator aborts the group, so no rank may close while a sibling still finishes its last
     * collective.
     */
    static void finish(Communicator comm, Path dir, int rank, int n, long timeoutNs)
            throws Exception {
        finish(comm::barrier, List.of(comm), dir, rank, n, timeoutNs);
    }

    /** As {@link #finish(Communicator, Path, int, int, long)}, for a rank of several groups. */
    static void finish(
            Runnable barrier, List<Communicator> comms, Path dir, int rank, int n, long timeoutNs)
            throws Exception {
        try {
            barrier.run();
            Files.writeString(dir.resolve("rank-" + rank + ".done"), "");
            long deadline = System.nanoTime() + timeoutNs;
            for (int r = 0; r < n; r++) {
                int peer = r;
                PublishedFiles.await(
                        dir.resolve("rank-" + r + ".done"),
                        deadline,
                        5,
                        () -> "rank " + peer + " never finished");
            }
        } finally {
            for (Communicator comm : comms) {
                comm.close();
            }
        }
    }
}
