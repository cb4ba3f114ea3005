package moe.a2a.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The child JVMs of one bench run, one per rank, started from this JVM's jar: they meet in the
 * run's temporary folder, each logs there as {@code rank-<r>.log} and leaves its results there as
 * files. A rank that dies or fails is reported with its log; closing destroys any still running.
 */
final class RankProcesses implements AutoCloseable {
    private static final long POLL_MS = 20;

    private final Path dir;
    private final String jar;
    private final long groupId;
    private final List<Process> children = new ArrayList<>();

    private RankProcesses(Path dir, String jar, long groupId) {
        this.dir = dir;
        this.jar = jar;
        this.groupId = groupId;
    }

    /** A fresh temporary folder named {@code prefix…} and a fresh group id; no rank started yet. */
    static RankProcesses create(String prefix) throws Exception {
        Path dir = Files.createTempDirectory(prefix);
        String jar =
                Path.of(Main.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                        .toString();
        return new RankProcesses(dir, jar, System.nanoTime());
    }

    /** The run's folder, where the ranks meet and write their results. */
    Path dir() {
        return dir;
    }

    /** The id that keeps this run's groups apart from any other's. */
    long groupId() {
        return groupId;
    }

    /**
     * Starts the next rank: {@code java}, {@code jvmOptions}, this jar's {@link Main} and {@code
     * args} (the subcommand and its flags), its output in {@code rank-<r>.log}.
     */
    void start(List<String> jvmOptions, List<String> args) throws IOException {
        List<String> extra = new ArrayList<>(jvmOptions);
        extra.addAll(List.of("-cp", jar, Main.class.getName()));
        extra.addAll(args);
        children.add(
                new ProcessBuilder(JvmOptions.childCommand(extra.toArray(String[]::new)))
                        .redirectErrorStream(true)
                        .redirectOutput(log(children.size()).toFile())
                        .start());
    }

    /**
     * Waits for {@code file} from {@code rank}, for as long as that rank runs; fails with its log
     * when it stopped without writing it ({@code before}: what it never reached).
     */
    Path await(int rank, Path file, String before) throws Exception {
        Process p = children.get(rank);
        while (!Files.exists(file)) {
            if (p.waitFor(POLL_MS, TimeUnit.MILLISECONDS) && !Files.exists(file)) {
                throw new IllegalStateException(
                        "bench rank "
                                + rank
                                + " stopped before "
                                + before
                                + ":\n"
                                + Files.readString(log(rank)));
            }
        }
        return file;
    }

    /** Waits for {@code rank} to exit; fails with its log when it fails or outlives the timeout. */
    void awaitExit(int rank, long timeout, TimeUnit unit) throws Exception {
        Process p = children.get(rank);
        if (!p.waitFor(timeout, unit) || p.exitValue() != 0) {
            throw new IllegalStateException(
                    "bench rank " + rank + " failed:\n" + Files.readString(log(rank)));
        }
    }

    private Path log(int rank) {
        return dir.resolve("rank-" + rank + ".log");
    }

    @Override
    public void close() {
        for (Process p : children) {
            p.destroyForcibly();
        }
    }
}
