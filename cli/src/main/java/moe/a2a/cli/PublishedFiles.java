package moe.a2a.cli;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.function.Supplier;

/**
 * Files that the processes of one bench run hand each other in the run's folder (addresses, times,
 * an NCCL id, done marks): written whole under a temporary name and moved into place, so that a
 * reader never sees half a file, and awaited by polling to a deadline.
 */
final class PublishedFiles {
    private PublishedFiles() {}

    /** Publishes {@code text} as {@code file}, through {@code <file>.tmp}. */
    static void publish(Path file, String text) throws Exception {
        publish(file, text.getBytes(StandardCharsets.UTF_8));
    }

    /** Publishes {@code bytes} as {@code file}, through {@code <file>.tmp}. */
    static void publish(Path file, byte[] bytes) throws Exception {
        publish(file.resolveSibling(file.getFileName() + ".tmp"), file, bytes);
    }

    /** Publishes {@code bytes} as {@code file}, written first as {@code tmp}. */
    static void publish(Path tmp, Path file, byte[] bytes) throws Exception {
        Files.write(tmp, bytes);
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
    }

    /**
     * Waits for {@code file}, looking every {@code pollMs}; past {@code deadlineNs} ({@link
     * System#nanoTime()}) fails with {@code missing}'s message.
     */
    static Path await(Path file, long deadlineNs, long pollMs, Supplier<String> missing)
            throws InterruptedException {
        while (!Files.exists(file)) {
            if (System.nanoTime() > deadlineNs) {
                throw new IllegalStateException(missing.get());
            }
            Thread.sleep(pollMs);
        }
        return file;
    }
}
