package moe.a2a.comm.shm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ExchangeTimeoutException;
import moe.a2a.comm.RankThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The files of the transport: cleanup of stale ones, nothing left after close, joining. */
@Timeout(60)
class ShmFilesTest {
    /** Above Linux's largest pid_max (2^22): never a live process. */
    private static final long DEAD_PID = 1L << 30;

    @TempDir Path dir;

    @Test
    void shouldDeleteOnlyThisTransportsFilesWhoseOwnerIsDead() throws Exception {
        long me = ProcessHandle.current().pid();
        Path deadControl = stamped("moe-a2a-shm-00000000000000aa-r1.ctl", DEAD_PID);
        Path deadData = stamped("moe-a2a-shm-00000000000000aa-r1-g3.dat", DEAD_PID);
        Path deadTmp = Files.createFile(dir.resolve("moe-a2a-shm-tmp-" + DEAD_PID + "-1f.part"));
        Path live = stamped("moe-a2a-shm-00000000000000bb-r0.ctl", me);
        Path liveTmp = Files.createFile(dir.resolve("moe-a2a-shm-tmp-" + me + "-2f.part"));
        Path unreadable = Files.write(dir.resolve("moe-a2a-shm-garbage"), new byte[3]);
        Path foreign = stamped("other-app-file", DEAD_PID);

        assertThat(ShmFiles.cleanStale(dir)).isEqualTo(3);

        assertThat(ShmProcessTest.files(dir))
                .containsExactlyInAnyOrder(live, liveTmp, unreadable, foreign)
                .doesNotContain(deadControl, deadData, deadTmp);
    }

    @Test
    void shouldLeaveNothingBehindWhenClosedEvenAfterRegionsGrew() throws Exception {
        long groupId = ThreadLocalRandom.current().nextLong();
        int n = 2;
        List<Boolean> ok =
                RankThreads.run(
                        n,
                        rank -> {
                            try (ShmCommunicator comm =
                                    ShmCommunicator.open(
                                            new ShmConfig(
                                                    rank,
                                                    n,
                                                    groupId,
                                                    dir,
                                                    TimeUnit.SECONDS.toNanos(10),
                                                    ShmConfig.DEFAULT_HEARTBEAT_TIMEOUT_NS,
                                                    4096))) {
                                for (int bytes : new int[] {10, 100_000, 3_000_000}) {
                                    long[] counts = {bytes, bytes};
                                    ByteBuffer send = ByteBuffer.allocateDirect(2 * bytes);
                                    ByteBuffer recv = ByteBuffer.allocateDirect(2 * bytes);
                                    for (int i = 0; i < 2 * bytes; i++) {
                                        send.put(i, (byte) (rank + i));
                                    }
                                    comm.allToAllV(
                                            bytes,
                                            ExchangePhase.DISPATCH,
                                            send,
                                            counts,
                                            recv,
                                            counts.clone());
                                    for (int src = 0; src < n; src++) {
                                        int at = src * bytes;
                                        int from = rank * bytes;
                                        for (int i = 0; i < bytes; i++) {
                                            if (recv.get(at + i) != (byte) (src + from + i)) {
                                                throw new AssertionError("byte " + i);
                                            }
                                        }
                                    }
                                }
                                return true;
                            }
                        });
        assertThat(ok).containsOnly(true);
        assertThat(ShmProcessTest.files(dir)).isEmpty();
    }

    @Test
    void shouldNameTheRankThatNeverCreatesItsFiles() {
        long start = System.nanoTime();
        assertThatThrownBy(
                        () ->
                                ShmCommunicator.open(
                                        new ShmConfig(
                                                0, 2, 7, dir, TimeUnit.MILLISECONDS.toNanos(300))))
                .isInstanceOf(ExchangeTimeoutException.class)
                .hasMessageContaining("peer=1");
        assertThat(System.nanoTime() - start).isLessThan(TimeUnit.SECONDS.toNanos(5));
        assertThat(dir).isEmptyDirectory();
    }

    @Test
    void shouldRefuseABadConfigNamingTheField() {
        assertThatThrownBy(() -> new ShmConfig(2, 2, 1, dir, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("rank: 2");
        assertThatThrownBy(() -> new ShmConfig(0, 1, 1, dir, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("timeoutNs");
        assertThatThrownBy(
                        () ->
                                ShmCommunicator.open(
                                        new ShmConfig(0, 1, 1, dir.resolve("missing"), 1000)))
                .isInstanceOf(A2aException.class)
                .hasMessageContaining("missing");
    }

    /** A file of {@code name} carrying the transport's magic and {@code pid} as its owner. */
    private Path stamped(String name, long pid) throws Exception {
        Path file = dir.resolve(name);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(64);
            seg.set(ValueLayout.JAVA_LONG, ShmLayout.MAGIC_AT, ShmLayout.MAGIC);
            seg.set(ValueLayout.JAVA_LONG, ShmLayout.PID_AT, pid);
            Files.write(file, seg.toArray(ValueLayout.JAVA_BYTE));
        }
        return file;
    }

    /**
     * A full shared-memory file system refuses a region with an error naming the folder, instead of
     * a mapping that would fault (SIGBUS) on its first write in an exchange. Needs a tmpfs of its
     * own: mounted here when the tests run as root (as CI does), else skipped.
     */
    @Test
    void shouldRefuseARegionThatAFullFileSystemCannotHold() throws Exception {
        Path small = dir.resolve("small");
        Files.createDirectories(small);
        assumeTrue(mount(small), "not root, or no mount: a 256 KiB tmpfs is needed");
        try (Arena arena = Arena.ofShared()) {
            assertThat(ShmFiles.create(small, "fits.dat", 64 << 10, arena).byteSize())
                    .isEqualTo(64 << 10);
            assertThatThrownBy(() -> ShmFiles.create(small, "too-big.dat", 4 << 20, arena))
                    .isInstanceOf(IOException.class)
                    .hasMessageStartingWith("shm: no room for 4194304 bytes in " + small)
                    .hasMessageContaining("--shm-dir");
            try (var left = Files.list(small)) {
                assertThat(left.map(p -> p.getFileName().toString()))
                        .as("nothing of the refused region left behind")
                        .containsExactly("fits.dat");
            }
        } finally {
            new ProcessBuilder("umount", small.toString()).start().waitFor();
        }
    }

    private static boolean mount(Path at) throws Exception {
        if (!"root".equals(System.getProperty("user.name"))) {
            return false;
        }
        try {
            Process p =
                    new ProcessBuilder(
                                    "mount",
                                    "-t",
                                    "tmpfs",
                                    "-o",
                                    "size=256k",
                                    "tmpfs",
                                    at.toString())
                            .redirectErrorStream(true)
                            .start();
            p.getInputStream().readAllBytes();
            return p.waitFor() == 0;
        } catch (IOException e) {
            return false;
        }
    }
}
