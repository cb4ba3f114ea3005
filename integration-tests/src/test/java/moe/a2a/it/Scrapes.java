package moe.a2a.it;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/** Reading a server's /metrics page. */
final class Scrapes {
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private Scrapes() {}

    /** The text of http://HOST:PORT/metrics. */
    static String scrape(String host, int port) throws Exception {
        return HTTP.send(
                        HttpRequest.newBuilder(
                                        URI.create("http://" + host + ":" + port + "/metrics"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
    }

    /**
     * Polls until a series of {@code gauge} reads {@code wanted}, for 30 s, or fails with the last
     * scrape and what {@code logs} gives.
     */
    static void awaitGauge(String host, int port, String gauge, int wanted, Supplier<String> logs)
            throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        String last = "";
        while (System.nanoTime() < deadline) {
            last = scrape(host, port);
            for (String line : last.lines().toList()) {
                if (line.startsWith(gauge + "{") && line.endsWith(" " + wanted + ".0")) {
                    return;
                }
            }
            Thread.sleep(100);
        }
        throw new AssertionError(gauge + " never " + wanted + ":\n" + last + logs.get());
    }
}
