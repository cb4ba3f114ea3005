package moe.a2a.control.grpc;

import io.grpc.Server;
import io.grpc.ServerBuilder;
import java.io.IOException;
import java.util.concurrent.TimeUnit;
import moe.a2a.control.cluster.RemoteCluster;

/**
 * The cluster port: ClusterService alone (worker sessions, group formation), on a server of its own
 * so that the client port never exposes it, on whatever {@link ServerBuilder} the caller supplies
 * (Netty with mutual TLS and worker tokens for the CLI, in-process for tests).
 */
public final class ClusterServer implements AutoCloseable {
    private final Server server;

    private ClusterServer(Server server) {
        this.server = server;
    }

    /** Starts serving the sessions of {@code cluster}'s workers. */
    public static ClusterServer start(ServerBuilder<?> builder, RemoteCluster cluster)
            throws IOException {
        return new ClusterServer(
                builder.addService(MalformedMessages.guard(new ClusterGrpcService(cluster)))
                        .build()
                        .start());
    }

    /** The bound port (meaningful for socket servers). */
    public int port() {
        return server.getPort();
    }

    /** Stops accepting sessions; those still open end within a second or are cut. */
    @Override
    public void close() {
        server.shutdown();
        try {
            if (!server.awaitTermination(1, TimeUnit.SECONDS)) {
                server.shutdownNow();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            server.shutdownNow();
        }
    }
}
