package moe.a2a.cli;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.DataPlane;
import moe.a2a.comm.GroupEpoch;
import moe.a2a.comm.GroupPeers;
import moe.a2a.comm.PlaneBinding;
import moe.a2a.comm.PlaneSettings;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportProbe;
import moe.a2a.comm.TransportProvider;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import moe.a2a.comm.tcp.TcpCommunicator;
import moe.a2a.comm.tcp.TcpConfig;
import moe.a2a.comm.tcp.TcpTransport;
import org.jspecify.annotations.Nullable;

/**
 * How a bench child process ({@code bench-rank}, {@code bench-collective-rank}) joins its group of
 * sibling processes: over its transport's data plane ({@link TransportProvider#dataPlane}), with
 * the run's folder in the place of a control plane: each rank binds, publishes what its peers need
 * ({@code rank-<r>.bind}: its address, and the group's token from the rank that makes one) and
 * forms the group once every rank's is there. {@code bench-host-rank} joins its tcp groups by
 * {@link #tcp} at addresses of its own choosing.
 */
final class ChildRankGroup {
    /** How long a bench child waits for its siblings, and each exchange for its peers. */
    static final long TIMEOUT_NS = TimeUnit.SECONDS.toNanos(120);

    private ChildRankGroup() {}

    /** What a rank does once it has joined its group. */
    @FunctionalInterface
    interface RankBody {
        void run(Communicator comm) throws Exception;
    }

    /**
     * The data-plane settings of a bench child on this host: loopback, one event-loop thread, the
     * default shared-memory directory, CUDA device {@code device}.
     */
    static PlaneSettings settings(
            int device, @Nullable Path cudaLibDir, @Nullable Path ncclLibDir) {
        return new PlaneSettings(
                InetAddress.getLoopbackAddress().getHostAddress(),
                0,
                1,
                null,
                Path.of(WorkerCommand.DEFAULT_SHM_DIR),
                device,
                cudaLibDir,
                ncclLibDir);
    }

    /**
     * Joins the group as {@code rank} of {@code n} over {@code transport} ({@link #join}), runs
     * {@code body} on it and leaves once every rank is done ({@link #finish}).
     *
     * @throws IllegalArgumentException naming {@code --transport} when the transport cannot run
     *     here
     */
    static void run(
            Transport transport,
            PlaneSettings settings,
            int rank,
            int n,
            long groupId,
            Path dir,
            RankBody body)
            throws Exception {
        TransportProvider provider = Transports.provider(transport);
        if (provider.reach() == TransportReach.THREADS) {
            throw new IllegalArgumentException(
                    "--transport: "
                            + transport
                            + " (expected: one of "
                            + Transports.labels(Transports.betweenProcesses())
                            + ")");
        }
        TransportProbe probe = provider.probe(settings);
        if (!probe.usable()) {
            throw new IllegalArgumentException(
                    "--transport: " + transport + ": " + probe.description());
        }
        try (DataPlane plane = provider.dataPlane(settings)) {
            Communicator comm = join(plane, rank, n, groupId, dir, TIMEOUT_NS);
            body.run(comm);
            finish(comm, dir, rank, n, TIMEOUT_NS);
        }
    }

    /**
     * Binds {@code plane} as {@code rank} of {@code n}, publishes the binding and forms the group
     * with every rank's; the communicator is the caller's to close.
     */
    private static Communicator join(
            DataPlane plane, int rank, int n, long groupId, Path dir, long timeoutNs)
            throws Exception {
        PlaneBinding bound = plane.bind(new GroupEpoch(1, rank, n, groupId, timeoutNs));
        PublishedFiles.publish(
                dir.resolve("rank-" + rank + ".bind"),
                bound.address() + "\n" + HexFormat.of().formatHex(bound.groupToken()));
        List<String> addresses = new ArrayList<>();
        byte[] token = new byte[0];
        long deadline = System.nanoTime() + timeoutNs;
        for (int r = 0; r < n; r++) {
            int peer = r;
            Path published =
                    PublishedFiles.await(
                            dir.resolve("rank-" + r + ".bind"),
                            deadline,
                            20,
                            () -> "rank " + peer + " never published its binding");
            List<String> lines = Files.readAllLines(published);
            addresses.add(lines.get(0));
            if (lines.size() > 1 && !lines.get(1).isEmpty() && token.length == 0) {
                token = HexFormat.of().parseHex(lines.get(1));
            }
        }
        return plane.form(new GroupPeers(1, addresses, token));
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
