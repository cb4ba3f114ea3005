package moe.a2a.control.cluster;

import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.io.IOException;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.Transport;
import moe.a2a.control.cluster.ClusterMembershipTest.Session;
import moe.a2a.control.grpc.ClusterServer;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.ModelConfig;
import moe.a2a.v1.ClusterServiceGrpc;
import moe.a2a.v1.ModelSpec;

/**
 * A {@link RemoteCluster} of two ranks (or as many as asked) behind an in-process ClusterService,
 * for membership tests.
 */
final class InProcessCluster implements AutoCloseable {
    static final String FINGERPRINT = "experts=4,hidden=8,ffn=8,topK=2,layers=1,weights=seeded:1";

    final RemoteCluster cluster;
    private final ClusterServer server;
    private final ManagedChannel channel;

    InProcessCluster(Transport transport) throws IOException {
        this(TransportPolicy.of(transport));
    }

    InProcessCluster(TransportPolicy transport) throws IOException {
        this(transport, 2, "");
    }

    /**
     * @param dispatchDType the model's dispatch dtype, as {@code ModelSpec.dispatch_dtype}
     */
    InProcessCluster(TransportPolicy transport, int worldSize, String dispatchDType)
            throws IOException {
        ModelConfig model = new ModelConfig(4, 8, 8, 2, 1);
        ModelSpec spec =
                ModelSpec.newBuilder()
                        .setDispatchDtype(dispatchDType)
                        .setExperts(4)
                        .setHidden(8)
                        .setFfn(8)
                        .setTopK(2)
                        .setLayers(1)
                        .setSeed(1)
                        .build();
        cluster =
                new RemoteCluster(
                        model,
                        spec,
                        FINGERPRINT,
                        Placement.contiguous(model.experts(), worldSize),
                        transport,
                        TimeUnit.SECONDS.toNanos(5),
                        TimeUnit.SECONDS.toNanos(30),
                        new QuietListener(),
                        new StragglerWatch(StragglerWatch.Settings.DEFAULT, worldSize, null));
        String name = InProcessServerBuilder.generateName();
        server =
                ClusterServer.start(InProcessServerBuilder.forName(name).directExecutor(), cluster);
        channel = InProcessChannelBuilder.forName(name).directExecutor().build();
    }

    /** A worker's session, not yet joined. */
    Session open() {
        Session s = new Session();
        s.requests = ClusterServiceGrpc.newStub(channel).session(s);
        return s;
    }

    @Override
    public void close() {
        channel.shutdownNow();
        server.close();
        cluster.close();
    }
}
