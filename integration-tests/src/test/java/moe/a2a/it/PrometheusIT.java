package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The metrics as their real consumer sees them: a Prometheus server (Debian's {@code prometheus})
 * scrapes {@code serve} with the scrape config and alert rules of {@code deploy/prometheus/}, while
 * {@code client} processes drive uniform and then skewed load; the series are then read back
 * through Prometheus's query API, and every query of the Grafana dashboard is run against it.
 * {@code promtool} checks a scrape, the config and the rules. Skipped when Prometheus is not
 * installed, unless {@code MOE_A2A_IT_REQUIRE_PROMETHEUS=1} (CI sets it).
 */
@Timeout(300)
class PrometheusIT {
    private static final Path DEPLOY = Path.of("..", "deploy").toAbsolutePath().normalize();
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @TempDir Path dir;

    @Test
    void shouldShowExchangeLatencyAndImbalanceInPrometheus() throws Exception {
        boolean installed = onPath("prometheus") && onPath("promtool");
        if (!installed && "1".equals(System.getenv("MOE_A2A_IT_REQUIRE_PROMETHEUS"))) {
            throw new AssertionError(
                    "prometheus/promtool not on PATH but MOE_A2A_IT_REQUIRE_PROMETHEUS=1");
        }
        assumeTrue(
                installed,
                "prometheus and promtool are not installed (apt-get install prometheus)");
        checkDeployFiles();

        int metricsPort = CliProcess.freePort();
        try (CliProcess serve =
                CliProcess.moeA2a(
                        dir,
                        "serve",
                        "serve",
                        "--port",
                        "0",
                        "--metrics-port",
                        Integer.toString(metricsPort),
                        "--world-size",
                        "4",
                        "--experts",
                        "16",
                        "--hidden",
                        "64",
                        "--ffn",
                        "96",
                        "--seed",
                        "5")) {
            int port = serve.awaitServingPort(Duration.ofSeconds(60));
            String scrape = get("http://127.0.0.1:" + metricsPort + "/metrics");
            Files.writeString(dir.resolve("scrape.txt"), scrape);
            ProcessResult check =
                    run(List.of("promtool", "check", "metrics"), dir.resolve("scrape.txt"));
            assertThat(check.exit).as(check.output).isZero();
            assertThat(check.output.strip()).as("promtool check metrics findings").isEmpty();

            int promPort = CliProcess.freePort();
            try (CliProcess prometheus = startPrometheus(metricsPort, promPort)) {
                String api = "http://127.0.0.1:" + promPort;
                awaitTrue(
                        () ->
                                query(api, "up{job=\"moe-a2a\"}").size() == 1
                                        && value(query(api, "up{job=\"moe-a2a\"}").get(0)) == 1.0,
                        "Prometheus scraping serve");
                assertThat(prometheus.isAlive()).as(prometheus.output()).isTrue();

                drive(port, "0", "256");
                awaitTrue(
                        () ->
                                !query(
                                                api,
                                                "moe_a2a_exchange_seconds_count{phase=\"dispatch\"} >= 10")
                                        .isEmpty(),
                        "uniform steps scraped");
                double uniform =
                        value(query(api, "max(moe_a2a_expert_imbalance{layer=\"0\"})").get(0));

                drive(port, "1.2", "256");
                awaitTrue(
                        () ->
                                value(
                                                query(
                                                                api,
                                                                "max(moe_a2a_expert_imbalance{layer=\"0\"})")
                                                        .get(0))
                                        > uniform + 1.0,
                        // the gauge covers the last 16 steps: wait until skewed steps fill it
                        "imbalance after skewed load");
                double skewed =
                        value(query(api, "max(moe_a2a_expert_imbalance{layer=\"0\"})").get(0));
                System.out.printf(
                        Locale.ROOT,
                        "PrometheusIT: expert imbalance uniform %.3f, skew 1.2 %.3f%n",
                        uniform,
                        skewed);
                assertThat(skewed).isGreaterThan(uniform + 1.0);

                assertMoving(api, "sum(rate(moe_a2a_expert_routed_tokens_total[1m]))");
                assertMoving(api, "sum(rate(moe_a2a_transport_sent_bytes_total[1m]))");
                assertMoving(
                        api,
                        "sum(rate(grpc_server_processing_duration_seconds_count{service=\"moe.a2a.v1.MoeService\",status_code=\"OK\"}[1m]))");
                for (String phase : new String[] {"dispatch", "combine"}) {
                    String p99 =
                            "histogram_quantile(0.99, sum by (le) (rate(moe_a2a_exchange_seconds_bucket{phase=\""
                                    + phase
                                    + "\"}[1m])))";
                    double v = value(query(api, p99).get(0));
                    System.out.printf(Locale.ROOT, "PrometheusIT: %s = %.6f s%n", p99, v);
                    assertThat(v).as(p99).isFinite().isPositive();
                }
                assertThat(value(query(api, "max(moe_a2a_cluster_healthy_ranks)").get(0)))
                        .isEqualTo(4.0);
                // the process's own role label survives the scrape (no clash with a target label)
                assertThat(
                                query(
                                        api,
                                        "moe_a2a_cluster_size_ranks{role=\"embedded\", exported_role=\"\"}"))
                        .hasSize(1);
                assertThat(
                                value(
                                        query(
                                                        api,
                                                        "sum(jvm_buffer_memory_used_bytes{id=\"direct\"})")
                                                .get(0)))
                        .isPositive();

                assertRulesLoaded(api);
                assertDashboardQueriesRun(api);
            }
        }
    }

    /** The deploy files pass promtool: config, rules and the rules' unit tests. */
    private void checkDeployFiles() throws Exception {
        Path prom = DEPLOY.resolve("prometheus");
        for (List<String> command :
                List.of(
                        List.of(
                                "promtool",
                                "check",
                                "config",
                                prom.resolve("prometheus.yml").toString()),
                        List.of(
                                "promtool",
                                "check",
                                "config",
                                prom.resolve("local-cluster.yml").toString()),
                        List.of(
                                "promtool",
                                "check",
                                "rules",
                                prom.resolve("alerts.yml").toString()),
                        List.of(
                                "promtool",
                                "test",
                                "rules",
                                prom.resolve("alerts_test.yml").toString()))) {
            ProcessResult r = run(command, null);
            assertThat(r.exit).as(String.join(" ", command) + "\n" + r.output).isZero();
        }
    }

    /**
     * Prometheus with deploy/prometheus's config, the target moved to this test's port and scraped
     * every second.
     */
    private CliProcess startPrometheus(int metricsPort, int promPort) throws IOException {
        Path prom = DEPLOY.resolve("prometheus");
        String config = Files.readString(prom.resolve("prometheus.yml"));
        assertThat(config).contains("127.0.0.1:9464").contains("scrape_interval: 5s");
        config =
                config.replace("127.0.0.1:9464", "127.0.0.1:" + metricsPort)
                        .replace("scrape_interval: 5s", "scrape_interval: 1s")
                        .replace("evaluation_interval: 5s", "evaluation_interval: 1s");
        Path conf = Files.createDirectories(dir.resolve("prometheus"));
        Files.writeString(conf.resolve("prometheus.yml"), config);
        Files.copy(prom.resolve("alerts.yml"), conf.resolve("alerts.yml"));
        return CliProcess.start(
                dir,
                "prometheus",
                List.of(
                        "prometheus",
                        "--config.file=" + conf.resolve("prometheus.yml"),
                        "--storage.tsdb.path=" + conf.resolve("data"),
                        "--web.listen-address=127.0.0.1:" + promPort));
    }

    private void drive(int port, String skew, String tokens) throws Exception {
        try (CliProcess client =
                CliProcess.moeA2a(
                        dir,
                        "client",
                        "client",
                        "--target",
                        "127.0.0.1:" + port,
                        "--requests",
                        "40",
                        "--tokens",
                        tokens,
                        "--concurrency",
                        "1",
                        "--skew",
                        skew,
                        "--verify",
                        "4")) {
            int exit = client.awaitExit(Duration.ofSeconds(120));
            assertThat(exit).as(client.output()).isZero();
        }
    }

    private static void assertMoving(String api, String promql) throws Exception {
        JsonArray result = query(api, promql);
        System.out.println("PrometheusIT: " + promql + " = " + result);
        assertThat(result).as(promql).isNotEmpty();
        assertThat(value(result.get(0))).as(promql).isPositive();
    }

    /** Every alert rule of deploy/prometheus is loaded and evaluates without error. */
    private static void assertRulesLoaded(String api) throws Exception {
        long rules =
                Files.readAllLines(
                                DEPLOY.resolve("prometheus").resolve("alerts.yml"),
                                StandardCharsets.UTF_8)
                        .stream()
                        .filter(l -> l.strip().startsWith("- alert:"))
                        .count();
        awaitTrue(
                () -> {
                    JsonArray groups =
                            api(api + "/api/v1/rules")
                                    .getAsJsonObject("data")
                                    .getAsJsonArray("groups");
                    int ok = 0;
                    for (JsonElement g : groups) {
                        for (JsonElement rule : g.getAsJsonObject().getAsJsonArray("rules")) {
                            JsonObject r = rule.getAsJsonObject();
                            if ("ok".equals(r.get("health").getAsString())) {
                                ok++;
                            }
                        }
                    }
                    return ok == rules;
                },
                rules + " alert rules evaluated with health ok");
    }

    /**
     * Every panel query of the Grafana dashboard is valid PromQL; the core panels return series.
     */
    private static void assertDashboardQueriesRun(String api) throws Exception {
        JsonObject dashboard =
                JsonParser.parseString(
                                Files.readString(DEPLOY.resolve("grafana").resolve("moe-a2a.json")))
                        .getAsJsonObject();
        List<String> empty = new ArrayList<>();
        int queries = 0;
        for (JsonElement p : dashboard.getAsJsonArray("panels")) {
            JsonObject panel = p.getAsJsonObject();
            if (!panel.has("targets")) {
                continue;
            }
            for (JsonElement t : panel.getAsJsonArray("targets")) {
                String expr =
                        t.getAsJsonObject()
                                .get("expr")
                                .getAsString()
                                .replace("$instance", ".*")
                                .replace("$layer", ".*")
                                .replace("$__rate_interval", "1m");
                queries++;
                if (query(api, expr).isEmpty()) {
                    empty.add(panel.get("title").getAsString() + ": " + expr);
                }
            }
        }
        assertThat(queries).isGreaterThan(15);
        // Errors, failures and rebuilds have nothing to show on a healthy run; everything else
        // must.
        assertThat(empty)
                .allMatch(
                        e ->
                                e.contains("status_code!=\"OK\"")
                                        || e.contains("failed")
                                        || e.contains("rebuilds")
                                        || e.contains("transport_errors"),
                        "empty panels");
    }

    private static JsonArray query(String api, String promql) throws Exception {
        JsonObject body =
                api(
                        api
                                + "/api/v1/query?query="
                                + URLEncoder.encode(promql, StandardCharsets.UTF_8));
        assertThat(body.get("status").getAsString()).as(promql + ": " + body).isEqualTo("success");
        return body.getAsJsonObject("data").getAsJsonArray("result");
    }

    private static double value(JsonElement sample) {
        return Double.parseDouble(
                sample.getAsJsonObject().getAsJsonArray("value").get(1).getAsString());
    }

    private static JsonObject api(String url) throws Exception {
        return JsonParser.parseString(send(url).body()).getAsJsonObject();
    }

    private static String get(String url) throws Exception {
        HttpResponse<String> response = send(url);
        assertThat(response.statusCode()).isEqualTo(200);
        return response.body();
    }

    private static HttpResponse<String> send(String url) throws Exception {
        return HTTP.send(
                HttpRequest.newBuilder(URI.create(url))
                        .GET()
                        .timeout(Duration.ofSeconds(10))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    interface Condition {
        boolean holds() throws Exception;
    }

    /** Polls for up to 60 s: Prometheus sees a change only after its next scrape. */
    private static void awaitTrue(Condition condition, String what) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        Exception last = null;
        while (System.nanoTime() < deadline) {
            try {
                if (condition.holds()) {
                    return;
                }
            } catch (Exception | AssertionError e) {
                last = e instanceof Exception ex ? ex : new Exception(e);
            }
            Thread.sleep(250);
        }
        throw new AssertionError("timed out waiting for: " + what, last);
    }

    private record ProcessResult(int exit, String output) {}

    private static ProcessResult run(List<String> command, Path stdin) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        if (stdin != null) {
            pb.redirectInput(stdin.toFile());
        }
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        return new ProcessResult(p.exitValue(), out);
    }

    private static boolean onPath(String binary) {
        for (String d :
                System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
            if (Files.isExecutable(Path.of(d, binary))) {
                return true;
            }
        }
        return false;
    }
}
