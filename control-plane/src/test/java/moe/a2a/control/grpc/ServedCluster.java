package moe.a2a.control.grpc;

import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import moe.a2a.comm.DataPlane;
import moe.a2a.comm.tcp.TcpTransport;
import moe.a2a.control.cluster.RemoteCluster;
import moe.a2a.experts.WeightSource;
import moe.a2a.v1.MoeServiceGrpc;

/**
 * A {@link RemoteCluster} served in-process, as the cluster tests need it: its cluster port, a
 * MoeServer on it, and worker agents (threads) that join over the cluster port with the data planes
 * {@code planes} gives each rank, TCP ones on {@link #tcp}. Closes everything: clients, then the
 * workers, then the servers.
 */
final class ServedCluster implements AutoCloseable {
    final RemoteCluster cluster;
    final TcpTransport tcp;
    final ManagedChannel toCluster;
    final AgentThreads agents;
    final MoeServiceGrpc.MoeServiceBlockingStub stub;
    private final ClusterServer clusterPort;
    private final MoeServer server;
    private final ManagedChannel clients;

    private ServedCluster(
            RemoteCluster cluster,
            WeightSource weights,
            int world,
            BiFunction<TcpTransport, Integer, List<DataPlane>> planes,
            MoeServer.Settings settings)
            throws Exception {
        this.cluster = cluster;
        String workers = InProcessServerBuilder.generateName();
        String clientPort = InProcessServerBuilder.generateName();
        this.clusterPort = ClusterServer.start(InProcessServerBuilder.forName(workers), cluster);
        this.tcp = new TcpTransport(1);
        this.server =
                MoeServer.start(
                        InProcessServerBuilder.forName(clientPort),
                        cluster,
                        weights,
                        settings,
                        new SimpleMeterRegistry(),
                        true);
        if (server.group() != cluster) {
            throw new IllegalStateException("the server serves another group");
        }
        this.toCluster = InProcessChannelBuilder.forName(workers).build();
        this.agents = new AgentThreads(toCluster, world, r -> planes.apply(tcp, r));
        this.clients = InProcessChannelBuilder.forName(clientPort).build();
        this.stub = MoeServiceGrpc.newBlockingStub(clients);
    }

    static ServedCluster start(
            RemoteCluster cluster,
            WeightSource weights,
            int world,
            BiFunction<TcpTransport, Integer, List<DataPlane>> planes)
            throws Exception {
        return start(
                cluster,
                weights,
                world,
                planes,
                new MoeServer.Settings(8192, 64, 1 << 20, 1 << 20, 2, 0, 0));
    }

    static ServedCluster start(
            RemoteCluster cluster,
            WeightSource weights,
            int world,
            BiFunction<TcpTransport, Integer, List<DataPlane>> planes,
            MoeServer.Settings settings)
            throws Exception {
        return new ServedCluster(cluster, weights, world, planes, settings);
    }

    @Override
    public void close() {
        try {
            clients.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            agents.close();
            toCluster.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            server.close();
            tcp.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            clusterPort.close();
        }
    }
}
