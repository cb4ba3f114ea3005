package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** What the shared-memory tests do to a worker's folder: wait for a group's files, fill it up. */
final class ShmFolders {
    private ShmFolders() {}

    /** Waits until a broken group's files are gone from {@code folder}, or fails. */
    static void awaitNoGroupFiles(Path folder) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!CliProcess.shmGroupFiles(folder).isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        assertThat(CliProcess.shmGroupFiles(folder)).as("files of the broken group").isEmpty();
    }

    /** Writes {@code file} until the file system has no room left; the bytes written. */
    static long fill(Path file) throws IOException {
        byte[] chunk = new byte[64 << 10];
        long written = 0;
        try (OutputStream out = Files.newOutputStream(file)) {
            while (true) {
                out.write(chunk);
                written += chunk.length;
            }
        } catch (IOException e) {
            if (!e.getMessage().contains("No space left")) {
                throw e;
            }
        }
        return written;
    }
}
