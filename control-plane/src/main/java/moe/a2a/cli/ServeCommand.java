package moe.a2a.cli;

import io.grpc.netty.NettyServerBuilder;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.Callable;
import moe.a2a.control.grpc.EmbeddedServer;
import moe.a2a.control.metrics.MetricsEndpoint;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.WeightSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code moe-a2a serve}: the embedded default, N in-process ranks behind gRPC. */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = "Serve MoE layers with N in-process ranks on the in-process transport.")
final class ServeCommand implements Callable<Integer> {
    private static final Logger LOG = LoggerFactory.getLogger(ServeCommand.class);

    @Mixin
    ModelOptions model;

    @Option(names = "--host", defaultValue = "0.0.0.0", description = "Address to bind gRPC and metrics to (default: ${DEFAULT-VALUE}).")
    String host;

    @Option(names = "--port", defaultValue = "50051", description = "gRPC port; 0 picks a free one (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = "--metrics-port", defaultValue = "9464", description = "Prometheus /metrics port; 0 turns it off (default: ${DEFAULT-VALUE}).")
    int metricsPort;

    @Option(names = "--world-size", defaultValue = "4", description = "In-process ranks (default: ${DEFAULT-VALUE}).")
    int worldSize;

    @Option(names = "--max-request-bytes", defaultValue = "67108864", description = "Largest accepted request message (default: ${DEFAULT-VALUE}).")
    int maxRequestBytes;

    @Option(names = "--max-batch-tokens", defaultValue = "8192", description = "Most tokens batched into one step (default: ${DEFAULT-VALUE}).")
    int maxBatchTokens;

    @Option(names = "--max-queued-requests", defaultValue = "1024", description = "Queued requests beyond this get RESOURCE_EXHAUSTED (default: ${DEFAULT-VALUE}).")
    int maxQueuedRequests;

    @Option(names = "--exchange-timeout", defaultValue = "PT10S", description = "How long a rank waits for its peers in one exchange, ISO-8601 (default: ${DEFAULT-VALUE}).")
    Duration exchangeTimeout;

    @Override
    public Integer call() throws Exception {
        long started = System.nanoTime();
        WeightSource weights = model.open();
        ModelConfig config = ModelOptions.config(weights, model.topK);
        EmbeddedServer.Settings settings = new EmbeddedServer.Settings(worldSize, maxBatchTokens,
                maxQueuedRequests, exchangeTimeout.toNanos(), maxRequestBytes);
        LOG.info("moe-a2a serve: model={} weights={} settings={} transport=local grpc={}:{} metricsPort={}",
                config, weights.description(), settings, host, port, metricsPort);
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        registry.config().commonTags("role", "embedded");
        new JvmMemoryMetrics().bindTo(registry);
        new JvmGcMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        MetricsEndpoint metrics = metricsPort > 0 ? MetricsEndpoint.start(registry, host, metricsPort) : null;
        EmbeddedServer server = EmbeddedServer.start(
                NettyServerBuilder.forAddress(new InetSocketAddress(host, port)), config, weights, settings, registry);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.close();
            if (metrics != null) {
                metrics.close();
            }
        }, "moe-a2a-shutdown"));
        LOG.info("serving on port {} ({} ranks ready in {} ms){}", server.port(), worldSize,
                (System.nanoTime() - started) / 1_000_000,
                metrics != null ? ", metrics on http://" + host + ":" + metrics.port() + "/metrics" : "");
        server.awaitTermination();
        return 0;
    }
}
