package moe.a2a.metrics;

import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import java.io.IOException;

/**
 * Serves {@code /metrics} for Prometheus from the registry, through the Prometheus exporter
 * library's HTTP server: the text format, or OpenMetrics when the scraper asks for it.
 */
public final class MetricsEndpoint implements AutoCloseable {
    private final HTTPServer server;

    private MetricsEndpoint(HTTPServer server) {
        this.server = server;
    }

    /** Starts serving on {@code host:port} (port 0 picks a free one). */
    public static MetricsEndpoint start(PrometheusMeterRegistry registry, String host, int port)
            throws IOException {
        return new MetricsEndpoint(
                HTTPServer.builder()
                        .hostname(host)
                        .port(port)
                        .registry(registry.getPrometheusRegistry())
                        .buildAndStart());
    }

    public int port() {
        return server.getPort();
    }

    @Override
    public void close() {
        server.close();
    }
}
