package moe.a2a.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;

/** /metrics over HTTP: the Prometheus text format by default, OpenMetrics when the scraper asks. */
class MetricsEndpointTest {
    @Test
    void shouldServeTextOrOpenMetricsAsTheScraperAsks() throws Exception {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new ClusterMetrics(4, () -> 4, () -> 4, () -> 1, () -> 0, () -> 0).bindTo(registry);
        HttpClient http = HttpClient.newHttpClient();
        try (MetricsEndpoint endpoint = MetricsEndpoint.start(registry, "127.0.0.1", 0)) {
            URI uri = URI.create("http://127.0.0.1:" + endpoint.port() + "/metrics");
            HttpResponse<String> text =
                    http.send(
                            HttpRequest.newBuilder(uri).build(),
                            HttpResponse.BodyHandlers.ofString());
            assertThat(text.statusCode()).isEqualTo(200);
            assertThat(text.headers().firstValue("Content-Type"))
                    .hasValueSatisfying(v -> assertThat(v).startsWith("text/plain"));
            assertThat(text.body())
                    .contains("# TYPE moe_a2a_communicator_rebuilds_total counter")
                    .contains("moe_a2a_communicator_rebuilds_total 1.0")
                    .doesNotContain("# EOF");

            HttpResponse<String> open =
                    http.send(
                            HttpRequest.newBuilder(uri)
                                    .header(
                                            "Accept",
                                            "application/openmetrics-text; version=1.0.0; charset=utf-8")
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
            assertThat(open.headers().firstValue("Content-Type"))
                    .hasValueSatisfying(
                            v -> assertThat(v).startsWith("application/openmetrics-text"));
            assertThat(open.body())
                    .contains("# TYPE moe_a2a_communicator_rebuilds counter")
                    .contains("moe_a2a_cluster_size_ranks 4.0")
                    .endsWith("# EOF\n");
        }
    }
}
