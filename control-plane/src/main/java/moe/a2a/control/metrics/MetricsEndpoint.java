package moe.a2a.control.metrics;

import com.sun.net.httpserver.HttpServer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/**
 * Serves {@code /metrics} for Prometheus from the registry: the text format, or OpenMetrics when
 * the scraper asks for it. The formatting is the Prometheus exporter library's (through
 * Micrometer); this class only moves bytes.
 */
public final class MetricsEndpoint implements AutoCloseable {
    private static final String OPENMETRICS =
            "application/openmetrics-text; version=1.0.0; charset=utf-8";
    private static final String TEXT = "text/plain; version=0.0.4; charset=utf-8";

    private final HttpServer server;

    private MetricsEndpoint(HttpServer server) {
        this.server = server;
    }

    /** Starts serving on {@code host:port} (port 0 picks a free one). */
    public static MetricsEndpoint start(PrometheusMeterRegistry registry, String host, int port)
            throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress(host, port), 0);
        server.createContext(
                "/metrics",
                exchange -> {
                    try (exchange) {
                        String accept = exchange.getRequestHeaders().getFirst("Accept");
                        String contentType =
                                accept != null && accept.contains("application/openmetrics-text")
                                        ? OPENMETRICS
                                        : TEXT;
                        byte[] body = registry.scrape(contentType).getBytes(StandardCharsets.UTF_8);
                        exchange.getResponseHeaders().set("Content-Type", contentType);
                        exchange.sendResponseHeaders(200, body.length);
                        try (OutputStream out = exchange.getResponseBody()) {
                            out.write(body);
                        }
                    }
                });
        server.start();
        return new MetricsEndpoint(server);
    }

    public int port() {
        return server.getAddress().getPort();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
