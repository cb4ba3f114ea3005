package moe.a2a.control.grpc;

import io.grpc.BindableService;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.grpc.MetricCollectingServerInterceptor;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import moe.a2a.control.cluster.RankGroup;
import moe.a2a.control.cluster.Rebalancer;
import moe.a2a.control.cluster.RoutingRecorder;
import moe.a2a.control.cluster.StepModes;
import moe.a2a.control.cluster.StepScheduler;
import moe.a2a.experts.WeightSource;
import moe.a2a.metrics.ClusterMetrics;
import moe.a2a.metrics.QueueMetrics;
import moe.a2a.metrics.StepMetrics;
import moe.a2a.v1.MoeServiceGrpc;
import org.jspecify.annotations.Nullable;

/**
 * The client port: MoeService on a step scheduler over a {@link RankGroup}, the services its caller
 * adds on the same group and scheduler (the CLI adds BenchService), plus health and reflection, on
 * whatever {@link ServerBuilder} the caller supplies (Netty, with TLS and client tokens when
 * configured, for the CLI; in-process for tests). Worker sessions have a port of their own ({@link
 * ClusterServer}).
 */
public final class MoeServer implements AutoCloseable {

    /**
     * A service served beside MoeService, built on the server's group and its scheduler (to run
     * work on the ranks between steps); its malformed requests are answered as MoeService's are.
     */
    @FunctionalInterface
    public interface ClientService {
        BindableService create(RankGroup group, StepScheduler scheduler);
    }

    /**
     * Server settings, validated when built.
     *
     * @param maxBatchTokens most tokens batched into one step
     * @param maxQueuedRequests requests waiting beyond this are refused with RESOURCE_EXHAUSTED
     * @param maxQueuedTokens tokens waiting beyond this are refused with RESOURCE_EXHAUSTED
     * @param maxRequestBytes larger gRPC messages are refused with RESOURCE_EXHAUSTED
     * @param maxStepsInFlight steps submitted to the ranks before the oldest is answered
     * @param rebalanceEvery steps of a layer between live rebalancing plans; 0 never rebalances
     * @param capacityFactor CF: each expert takes at most {@code ceil(CF · T · K / E)} of a step's
     *     pairs; 0 is dropless
     * @param recordRouting where and how much of the served routing to record; null records none
     * @param modes which steps exchange in low-latency mode ({@code --mode}, {@code
     *     --ll-max-tokens})
     */
    public record Settings(
            int maxBatchTokens,
            int maxQueuedRequests,
            long maxQueuedTokens,
            int maxRequestBytes,
            int maxStepsInFlight,
            int rebalanceEvery,
            double capacityFactor,
            RoutingRecorder.@Nullable Settings recordRouting,
            StepModes modes) {

        /** Settings whose steps all exchange in normal mode. */
        public Settings(
                int maxBatchTokens,
                int maxQueuedRequests,
                long maxQueuedTokens,
                int maxRequestBytes,
                int maxStepsInFlight,
                int rebalanceEvery,
                double capacityFactor,
                RoutingRecorder.@Nullable Settings recordRouting) {
            this(
                    maxBatchTokens,
                    maxQueuedRequests,
                    maxQueuedTokens,
                    maxRequestBytes,
                    maxStepsInFlight,
                    rebalanceEvery,
                    capacityFactor,
                    recordRouting,
                    StepModes.NORMAL);
        }

        /** Settings that record no routing. */
        public Settings(
                int maxBatchTokens,
                int maxQueuedRequests,
                long maxQueuedTokens,
                int maxRequestBytes,
                int maxStepsInFlight,
                int rebalanceEvery,
                double capacityFactor) {
            this(
                    maxBatchTokens,
                    maxQueuedRequests,
                    maxQueuedTokens,
                    maxRequestBytes,
                    maxStepsInFlight,
                    rebalanceEvery,
                    capacityFactor,
                    null);
        }

        public Settings {
            if (!(capacityFactor >= 0) || Double.isInfinite(capacityFactor)) {
                throw new IllegalArgumentException(
                        "--capacity-factor: "
                                + capacityFactor
                                + " (expected: a finite number >= 0; 0 is dropless)");
            }
            positive("maxStepsInFlight", maxStepsInFlight);
            positive("maxBatchTokens", maxBatchTokens);
            positive("maxQueuedRequests", maxQueuedRequests);
            positive("maxQueuedTokens", maxQueuedTokens);
            positive("maxRequestBytes", maxRequestBytes);
        }

        private static void positive(String name, long value) {
            if (value <= 0) {
                throw new IllegalArgumentException(name + ": " + value + " (expected: > 0)");
            }
        }
    }

    private final RankGroup group;
    private final StepScheduler scheduler;
    private final @Nullable RoutingRecorder recorder;
    private final HealthStatusManager health;
    private final ClusterWatch watch;
    private final Server server;

    private MoeServer(
            RankGroup group,
            StepScheduler scheduler,
            @Nullable RoutingRecorder recorder,
            HealthStatusManager health,
            ClusterWatch watch,
            Server server) {
        this.group = group;
        this.scheduler = scheduler;
        this.recorder = recorder;
        this.health = health;
        this.watch = watch;
        this.server = server;
    }

    /** Starts serving {@code group} with MoeService alone; see the other {@code start}. */
    public static MoeServer start(
            ServerBuilder<?> builder,
            RankGroup group,
            WeightSource weights,
            Settings settings,
            MeterRegistry registry,
            boolean serving)
            throws IOException {
        return start(builder, group, weights, settings, registry, serving, List.of());
    }

    /**
     * Starts serving {@code group}, which this server then owns (and closes), with {@code services}
     * beside MoeService. Health starts as {@code serving} says; {@link #setServing} changes it.
     */
    public static MoeServer start(
            ServerBuilder<?> builder,
            RankGroup group,
            WeightSource weights,
            Settings settings,
            MeterRegistry registry,
            boolean serving,
            List<ClientService> services)
            throws IOException {
        StepMetrics metrics =
                new StepMetrics(
                        registry,
                        weights.layerNumbers(),
                        group.model().experts(),
                        group.worldSize(),
                        group.transport());
        new ClusterMetrics(
                        group.worldSize(),
                        group::joined,
                        group::healthy,
                        group::rebuilds,
                        group::degradedRanks,
                        group::partitionedRanks)
                .bindTo(registry);
        RoutingRecorder recorder = null;
        if (settings.recordRouting() != null) {
            recorder =
                    new RoutingRecorder(
                            settings.recordRouting(),
                            group.model().experts(),
                            group.model().topK(),
                            group.worldSize());
            group.recordRouting();
        }
        StepScheduler scheduler =
                new StepScheduler(
                        group,
                        settings.maxBatchTokens(),
                        settings.maxQueuedRequests(),
                        settings.maxQueuedTokens(),
                        settings.maxStepsInFlight(),
                        settings.capacityFactor(),
                        settings.modes(),
                        metrics,
                        new Rebalancer(group, settings.rebalanceEvery(), metrics),
                        recorder);
        new QueueMetrics(scheduler::queuedRequests, scheduler::queuedTokens).bindTo(registry);
        HealthStatusManager health = new HealthStatusManager();
        ClusterWatch watch = new ClusterWatch(group::describe);
        Server server;
        try {
            builder.maxInboundMessageSize(settings.maxRequestBytes())
                    .intercept(new MetricCollectingServerInterceptor(registry))
                    .addService(
                            AdmissionGate.serve(
                                    new MoeGrpcService(
                                            weights,
                                            group,
                                            scheduler,
                                            watch,
                                            settings.capacityFactor()),
                                    scheduler))
                    .addService(health.getHealthService())
                    .addService(ProtoReflectionServiceV1.newInstance());
            for (ClientService service : services) {
                builder.addService(MalformedMessages.guard(service.create(group, scheduler)));
            }
            server = builder.build().start();
        } catch (IOException | RuntimeException e) {
            watch.close();
            scheduler.close();
            if (recorder != null) {
                recorder.close();
            }
            group.close();
            throw e;
        }
        MoeServer moe = new MoeServer(group, scheduler, recorder, health, watch, server);
        moe.setServing(serving);
        return moe;
    }

    /** SERVING or NOT_SERVING, for the whole server and for MoeService. */
    public void setServing(boolean serving) {
        ServingStatus status = serving ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
        health.setStatus("", status);
        health.setStatus(MoeServiceGrpc.SERVICE_NAME, status);
    }

    /** The bound port (meaningful for socket servers). */
    public int port() {
        return server.getPort();
    }

    public RankGroup group() {
        return group;
    }

    public void awaitTermination() throws InterruptedException {
        server.awaitTermination();
    }

    /**
     * Shuts down within {@code grace}: health turns NOT_SERVING and new requests get UNAVAILABLE at
     * once while the port stays open (so that probes see it), queued and running requests finish
     * during the first half, then the port closes and the rest of the grace lets calls still open
     * end; whatever is left then gets UNAVAILABLE.
     */
    public void drain(Duration grace) {
        setServing(false);
        scheduler.stopAccepting();
        long half = grace.toNanos() / 2;
        try {
            TimeUnit.NANOSECONDS.sleep(half);
            watch.close();
            server.shutdown();
            server.awaitTermination(grace.toNanos() - half, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        close();
    }

    @Override
    public void close() {
        health.enterTerminalState();
        watch.close();
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
        if (recorder != null) {
            recorder.close();
        }
        group.close();
    }
}
