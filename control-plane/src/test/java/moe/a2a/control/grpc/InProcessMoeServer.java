package moe.a2a.control.grpc;

import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.util.concurrent.TimeUnit;
import moe.a2a.control.cluster.RankGroup;
import moe.a2a.experts.WeightSource;
import moe.a2a.v1.MoeServiceGrpc;

/** A {@link MoeServer} over an in-process channel, with its meters, for one test. */
final class InProcessMoeServer implements AutoCloseable {
    final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    final MoeServer server;
    final ManagedChannel channel;
    final MoeServiceGrpc.MoeServiceBlockingStub stub;

    InProcessMoeServer(RankGroup group, WeightSource weights, MoeServer.Settings settings)
            throws IOException {
        String name = InProcessServerBuilder.generateName();
        server =
                MoeServer.start(
                        InProcessServerBuilder.forName(name).directExecutor(),
                        group,
                        weights,
                        settings,
                        registry,
                        true);
        channel = InProcessChannelBuilder.forName(name).directExecutor().build();
        stub = MoeServiceGrpc.newBlockingStub(channel);
    }

    @Override
    public void close() {
        channel.shutdownNow();
        try {
            channel.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        server.close();
    }
}
