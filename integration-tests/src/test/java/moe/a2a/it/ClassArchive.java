package moe.a2a.it;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import moe.a2a.cli.JvmOptions;

/**
 * A class-data-sharing archive of the CLI's classes for the JVMs the tests start: a run starts
 * hundreds, and one that maps the archive reaches serving in about half the time. Made once per
 * run, before the first child starts, by a training JVM that serves until it is ready and is then
 * stopped ({@code -XX:ArchiveClassesAtExit}); children only read it, so none writes a file another
 * maps. When it cannot be made the children start without it, as they would anyway.
 */
final class ClassArchive {
    private static List<String> options;

    private ClassArchive() {}

    /** The JVM options that map the archive, made now if this run has not made it; or none. */
    static synchronized List<String> options() {
        if (options == null) {
            options = make();
        }
        return options;
    }

    private static List<String> make() {
        String where = System.getProperty("moe.a2a.it.archive");
        if (where == null) {
            return List.of();
        }
        Path archive = Path.of(where);
        List<String> command =
                new ArrayList<>(
                        JvmOptions.childCommand("-Xmx1g", "-XX:ArchiveClassesAtExit=" + archive));
        command.addAll(
                List.of(
                        "-jar",
                        CliProcess.jar(),
                        "serve",
                        "--plaintext",
                        "--port",
                        "0",
                        "--metrics-port",
                        "0",
                        "--world-size",
                        "2",
                        "--experts",
                        "8",
                        "--hidden",
                        "64",
                        "--ffn",
                        "64"));
        try {
            Files.deleteIfExists(archive);
            Files.createDirectories(archive.getParent());
            try (CliProcess training =
                    CliProcess.start(archive.getParent(), "class-archive", command)) {
                training.awaitServingPort(Duration.ofSeconds(60));
                // the archive is written as the JVM exits
                training.terminate();
                training.awaitExit(Duration.ofSeconds(60));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return List.of();
        } catch (Exception | AssertionError e) {
            return List.of();
        }
        if (!Files.isRegularFile(archive)) {
            return List.of();
        }
        // a child whose jar or JVM differs from the archive's runs without it, and says nothing
        return List.of(
                "-XX:SharedArchiveFile=" + archive, "-Xlog:cds=off", "-Xlog:cds+dynamic=off");
    }
}
