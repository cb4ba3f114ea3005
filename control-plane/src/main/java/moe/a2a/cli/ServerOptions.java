package moe.a2a.cli;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.function.Supplier;
import moe.a2a.control.cluster.FirstPlacement;
import moe.a2a.control.grpc.MoeServer;
import moe.a2a.control.metrics.MetricsEndpoint;
import moe.a2a.control.metrics.ProcessMetrics;
import moe.a2a.dispatch.Placement;
import picocli.CommandLine.Option;

/** The flags shared by the server commands ({@code serve}, {@code control-plane}). */
final class ServerOptions {
    @Option(
            names = "--host",
            defaultValue = "0.0.0.0",
            description = "Address to bind gRPC and metrics to (default: ${DEFAULT-VALUE}).")
    String host;

    @Option(
            names = "--port",
            defaultValue = "50051",
            description = "gRPC port; 0 picks a free one (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(
            names = "--metrics-port",
            defaultValue = "9464",
            description = "Prometheus /metrics port; 0 turns it off (default: ${DEFAULT-VALUE}).")
    int metricsPort;

    @Option(
            names = "--world-size",
            defaultValue = "4",
            description = "Ranks (default: ${DEFAULT-VALUE}).")
    int worldSize;

    @Option(
            names = "--redundant-experts",
            defaultValue = "0",
            description =
                    "R extra expert slots: experts + R slots over the ranks, a multiple of the world size; the extra slots hold replicas that share their expert's tokens (default: ${DEFAULT-VALUE}).")
    int redundantExperts;

    @Option(
            names = "--rebalance-every",
            defaultValue = "0",
            description =
                    "Live rebalancing: every STEPS steps of a layer, plan its placement from the expert loads of those steps and switch to it once every rank has loaded it, if it lowers the predicted rank imbalance by 5 %% or more; 0 never (default: ${DEFAULT-VALUE}).",
            paramLabel = "STEPS")
    int rebalanceEvery;

    @Option(
            names = "--capacity-factor",
            defaultValue = "0",
            description =
                    "Expert capacity: each expert takes at most ceil(CF * T * K / E) of a step's token-expert pairs, the highest-weight ones of each rank's share (the rest dropped, other weights not renormalised); 0 is dropless (default: ${DEFAULT-VALUE}).",
            paramLabel = "CF")
    double capacityFactor;

    @Option(
            names = "--max-request-bytes",
            defaultValue = "67108864",
            description = "Largest accepted request message (default: ${DEFAULT-VALUE}).")
    int maxRequestBytes;

    @Option(
            names = "--max-batch-tokens",
            defaultValue = "8192",
            description = "Most tokens batched into one step (default: ${DEFAULT-VALUE}).")
    int maxBatchTokens;

    @Option(
            names = "--max-queued-requests",
            defaultValue = "1024",
            description =
                    "Queued requests beyond this get RESOURCE_EXHAUSTED (default: ${DEFAULT-VALUE}).")
    int maxQueuedRequests;

    @Option(
            names = "--max-queued-tokens",
            defaultValue = "65536",
            description =
                    "Tokens of the waiting requests beyond which a new one gets RESOURCE_EXHAUSTED at once (default: ${DEFAULT-VALUE}).")
    long maxQueuedTokens;

    @Option(
            names = "--max-steps-in-flight",
            defaultValue = "2",
            description =
                    "Steps handed to the ranks before the oldest is answered, so transfers overlap (default: ${DEFAULT-VALUE}).")
    int maxStepsInFlight;

    @Option(
            names = "--shutdown-grace",
            defaultValue = "PT10S",
            description =
                    "On SIGTERM: health NOT_SERVING and new requests UNAVAILABLE at once, queued and running requests finish, the port closes, and the process exits 0 within this time (e.g. 2s, 500ms or ISO-8601; default: ${DEFAULT-VALUE}).")
    Duration shutdownGrace;

    @Option(
            names = "--exchange-timeout",
            defaultValue = "PT10S",
            description =
                    "How long a rank waits for its peers in one exchange (e.g. 2s, 500ms or ISO-8601); it must cover the slowest rank's expert compute (default: ${DEFAULT-VALUE}).")
    Duration exchangeTimeout;

    /**
     * On SIGTERM, drains {@code moe} within {@code --shutdown-grace}, closes {@code metrics} and
     * exits 0: a requested stop is not a failure.
     */
    void drainOnSigterm(Supplier<MoeServer> moe, MetricsEndpoint metrics) {
        Runtime.getRuntime()
                .addShutdownHook(
                        new Thread(
                                () -> {
                                    boolean signalled = !Main.exitingOnItsOwn();
                                    try {
                                        moe.get().drain(shutdownGrace);
                                        if (metrics != null) {
                                            metrics.close();
                                        }
                                    } finally {
                                        if (signalled) {
                                            Runtime.getRuntime().halt(0);
                                        }
                                    }
                                },
                                "moe-a2a-shutdown"));
    }

    /** The coordinator's first placement of {@code experts} over the world size. */
    Placement placement(int experts) {
        return FirstPlacement.decide(experts, worldSize, redundantExperts);
    }

    MoeServer.Settings settings() {
        return new MoeServer.Settings(
                maxBatchTokens,
                maxQueuedRequests,
                maxQueuedTokens,
                maxRequestBytes,
                maxStepsInFlight,
                rebalanceEvery,
                capacityFactor);
    }

    /** A Prometheus registry with the process binders, tagged with the process's role. */
    static PrometheusMeterRegistry registry(String role) {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        registry.config().commonTags("role", role);
        ProcessMetrics.bindTo(registry);
        return registry;
    }

    /** Serves /metrics on {@code port}, or nothing when it is 0. */
    static MetricsEndpoint metrics(PrometheusMeterRegistry registry, String host, int port) {
        if (port == 0) {
            return null;
        }
        try {
            return MetricsEndpoint.start(registry, host, port);
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "--metrics-port " + port + ": cannot listen (pass another port, or 0)", e);
        }
    }
}
