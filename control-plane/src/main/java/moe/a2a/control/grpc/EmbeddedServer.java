package moe.a2a.control.grpc;

import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.util.concurrent.TimeUnit;
import moe.a2a.control.cluster.EmbeddedCluster;
import moe.a2a.control.cluster.StepScheduler;
import moe.a2a.control.metrics.StepMetrics;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.WeightSource;
import moe.a2a.v1.MoeServiceGrpc;

/**
 * The embedded default: {@code N} in-process ranks, the step scheduler, and MoeService with
 * health and reflection on whatever {@link ServerBuilder} the caller supplies (Netty for
 * {@code serve}, in-process for tests). Health turns SERVING once every rank has loaded its
 * experts.
 */
public final class EmbeddedServer implements AutoCloseable {

    /**
     * Server settings, validated when built.
     *
     * @param maxBatchTokens most tokens batched into one step
     * @param maxQueuedRequests requests waiting beyond this are refused with RESOURCE_EXHAUSTED
     * @param maxRequestBytes larger gRPC messages are refused with RESOURCE_EXHAUSTED
     */
    public record Settings(int worldSize, int maxBatchTokens, int maxQueuedRequests,
            long exchangeTimeoutNs, int maxRequestBytes) {
        public Settings {
            positive("worldSize", worldSize);
            positive("maxBatchTokens", maxBatchTokens);
            positive("maxQueuedRequests", maxQueuedRequests);
            positive("exchangeTimeoutNs", exchangeTimeoutNs);
            positive("maxRequestBytes", maxRequestBytes);
        }

        private static void positive(String name, long value) {
            if (value <= 0) {
                throw new IllegalArgumentException(name + ": " + value + " (expected: > 0)");
            }
        }
    }

    private final EmbeddedCluster cluster;
    private final StepScheduler scheduler;
    private final HealthStatusManager health;
    private final Server server;

    private EmbeddedServer(EmbeddedCluster cluster, StepScheduler scheduler, HealthStatusManager health, Server server) {
        this.cluster = cluster;
        this.scheduler = scheduler;
        this.health = health;
        this.server = server;
    }

    public static EmbeddedServer start(ServerBuilder<?> builder, ModelConfig model, WeightSource weights,
            Settings settings, MeterRegistry registry) throws IOException {
        EmbeddedCluster cluster = new EmbeddedCluster(model, weights, settings.worldSize(), settings.exchangeTimeoutNs());
        StepMetrics metrics = new StepMetrics(registry, model.layers(), model.experts(), settings.worldSize(), "local");
        StepScheduler scheduler = new StepScheduler(cluster, settings.maxBatchTokens(), settings.maxQueuedRequests(), metrics);
        HealthStatusManager health = new HealthStatusManager();
        Server server;
        try {
            server = builder
                    .maxInboundMessageSize(settings.maxRequestBytes())
                    .addService(new MoeGrpcService(model, weights, cluster.placement(), scheduler, "local"))
                    .addService(health.getHealthService())
                    .addService(ProtoReflectionServiceV1.newInstance())
                    .build()
                    .start();
        } catch (IOException | RuntimeException e) {
            scheduler.close();
            cluster.close();
            throw e;
        }
        health.setStatus("", ServingStatus.SERVING);
        health.setStatus(MoeServiceGrpc.SERVICE_NAME, ServingStatus.SERVING);
        return new EmbeddedServer(cluster, scheduler, health, server);
    }

    /** The bound port (meaningful for socket servers). */
    public int port() {
        return server.getPort();
    }

    public EmbeddedCluster cluster() {
        return cluster;
    }

    public void awaitTermination() throws InterruptedException {
        server.awaitTermination();
    }

    @Override
    public void close() {
        health.enterTerminalState();
        server.shutdown();
        try {
            if (!server.awaitTermination(5, TimeUnit.SECONDS)) {
                server.shutdownNow();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            server.shutdownNow();
        }
        scheduler.close();
        cluster.close();
    }
}
