package moe.a2a.cli;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * The client's per-request record (when it started, how long it took, which placement answered it),
 * kept by request index and written as CSV at the end, so latency can be lined up with what the
 * server did meanwhile. Each request's answer writes its own row; {@link #write} runs after every
 * request was answered.
 */
final class LatencyLog {
    private final String[] rows;

    LatencyLog(int requests) {
        this.rows = new String[requests];
    }

    void record(int request, long startUnixMs, long micros, long placementVersion, String status) {
        rows[request] =
                String.format(
                        Locale.ROOT,
                        "%d,%d,%.3f,%d,%s",
                        request,
                        startUnixMs,
                        micros / 1000.0,
                        placementVersion,
                        status);
    }

    void write(Path file) {
        StringBuilder out =
                new StringBuilder("request,start_unix_ms,latency_ms,placement_version,status\n");
        for (String row : rows) {
            if (row != null) {
                out.append(row).append('\n');
            }
        }
        try {
            Files.writeString(file, out, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("--latency-log " + file + ": cannot write", e);
        }
    }
}
