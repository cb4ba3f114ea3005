package moe.a2a.comm.shm;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Ranks as real processes ({@link ShmChild}), one JVM each, sharing only the directory. */
@Timeout(120)
class ShmProcessTest {
    private static final int SIZE = 3;

    @TempDir Path dir;

    private final List<Child> children = new ArrayList<>();

    @AfterEach
    void killLeftovers() {
        for (Child c : children) {
            c.process.destroyForcibly();
        }
    }

    @Test
    void shouldExchangeAndAllReduceAcrossProcessesAndLeaveNoFiles() throws Exception {
        long groupId = ThreadLocalRandom.current().nextLong();
        for (int r = 0; r < SIZE; r++) {
            children.add(Child.start(dir, groupId, r, SIZE, "check"));
        }
        for (Child c : children) {
            assertThat(c.process.waitFor(60, TimeUnit.SECONDS)).as("rank exits").isTrue();
            assertThat(c.process.exitValue()).as(c.output()).isZero();
            assertThat(c.output()).contains("READY rank=" + c.rank);
        }
        assertThat(files(dir)).as("every file unlinked on close").isEmpty();
    }

    @Test
    void shouldNameTheKilledProcessOnEveryOtherRankAndCleanItsFilesAtTheNextStart()
            throws Exception {
        long groupId = ThreadLocalRandom.current().nextLong();
        for (int r = 0; r < SIZE; r++) {
            children.add(Child.start(dir, groupId, r, SIZE, "loop"));
        }
        for (Child c : children) {
            assertThat(c.ready.await(60, TimeUnit.SECONDS)).as(c.output()).isTrue();
        }
        Child victim = children.get(2);
        long killedAt = System.nanoTime();
        victim.process.destroyForcibly().waitFor();
        for (Child c : children.subList(0, 2)) {
            assertThat(c.process.waitFor(ShmChild.TIMEOUT_NS, TimeUnit.NANOSECONDS))
                    .as("rank %d fails", c.rank)
                    .isTrue();
            assertThat(c.process.exitValue()).as(c.output()).isEqualTo(3);
            assertThat(c.output()).contains("FAILED rank=" + c.rank).contains("peer=2");
        }
        assertThat(System.nanoTime() - killedAt)
                .as("named long before the group's timeout")
                .isLessThan(ShmChild.TIMEOUT_NS / 4);

        List<Path> stale = files(dir);
        assertThat(stale)
                .as("the killed rank's files are left")
                .isNotEmpty()
                .allMatch(p -> p.getFileName().toString().contains("-r2"));
        try (ShmCommunicator next =
                ShmCommunicator.open(
                        new ShmConfig(
                                0,
                                1,
                                ThreadLocalRandom.current().nextLong(),
                                dir,
                                TimeUnit.SECONDS.toNanos(5)))) {
            assertThat(files(dir)).as("only the new group's").doesNotContainAnyElementsOf(stale);
            next.barrier();
        }
        assertThat(files(dir)).isEmpty();
    }

    @Test
    void shouldNameAStoppedProcessByItsHeartbeat() throws Exception {
        long groupId = ThreadLocalRandom.current().nextLong();
        for (int r = 0; r < SIZE; r++) {
            children.add(Child.start(dir, groupId, r, SIZE, "loop"));
        }
        for (Child c : children) {
            assertThat(c.ready.await(60, TimeUnit.SECONDS)).as(c.output()).isTrue();
        }
        Child stopped = children.get(1);
        long stoppedAt = System.nanoTime();
        Process stop =
                new ProcessBuilder("kill", "-STOP", Long.toString(stopped.process.pid())).start();
        assertThat(stop.waitFor()).isZero();
        for (int r : new int[] {0, 2}) {
            Child c = children.get(r);
            assertThat(c.process.waitFor(ShmChild.TIMEOUT_NS, TimeUnit.NANOSECONDS))
                    .as("rank %d fails", r)
                    .isTrue();
            assertThat(c.output()).contains("FAILED rank=" + r).contains("peer=1");
        }
        assertThat(System.nanoTime() - stoppedAt)
                .as("named by its heartbeat, before the group's timeout")
                .isLessThan(ShmChild.TIMEOUT_NS / 4);
        stopped.process.destroyForcibly().waitFor();
    }

    static List<Path> files(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.toList();
        }
    }

    /** A rank's process, its output gathered by a reader thread. */
    private static final class Child {
        final int rank;
        final Process process;
        final StringBuffer out = new StringBuffer();
        final CountDownLatch ready = new CountDownLatch(1);

        private Child(int rank, Process process) {
            this.rank = rank;
            this.process = process;
        }

        static Child start(Path dir, long groupId, int rank, int size, String mode)
                throws IOException {
            String java = ProcessHandle.current().info().command().orElse("java");
            ProcessBuilder pb =
                    new ProcessBuilder(
                                    java,
                                    "--add-modules=jdk.incubator.vector",
                                    "--enable-native-access=ALL-UNNAMED",
                                    "-XX:+UseSerialGC",
                                    "-XX:TieredStopAtLevel=1",
                                    "-Xmx128m",
                                    "-cp",
                                    System.getProperty("java.class.path"),
                                    ShmChild.class.getName(),
                                    dir.toString(),
                                    Long.toString(groupId),
                                    Integer.toString(rank),
                                    Integer.toString(size),
                                    mode)
                            .redirectErrorStream(true);
            Child c = new Child(rank, pb.start());
            Thread.ofPlatform()
                    .daemon()
                    .start(
                            () -> {
                                try (BufferedReader r =
                                        new BufferedReader(
                                                new InputStreamReader(
                                                        c.process.getInputStream(),
                                                        StandardCharsets.UTF_8))) {
                                    for (String line; (line = r.readLine()) != null; ) {
                                        c.out.append(line).append('\n');
                                        if (line.startsWith("READY")) {
                                            c.ready.countDown();
                                        }
                                    }
                                } catch (IOException e) {
                                    c.out.append("(output lost: ").append(e).append(")\n");
                                }
                            });
            return c;
        }

        String output() {
            return "rank " + rank + " output:\n" + out;
        }
    }
}
