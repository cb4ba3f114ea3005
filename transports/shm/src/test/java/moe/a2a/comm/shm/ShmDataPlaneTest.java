package moe.a2a.comm.shm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.GroupEpoch;
import moe.a2a.comm.GroupPeers;
import moe.a2a.comm.PlaneBinding;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link ShmDataPlane} on its own: its domain tells directories apart, bind tells the peers nothing
 * and form opens the group of the bound epoch in the plane's directory.
 */
@Timeout(60)
class ShmDataPlaneTest {
    @TempDir Path dir;

    @TempDir Path other;

    @Test
    void domainShouldMatchForOneDirectoryAndDifferForAnother() {
        assertThat(ShmDataPlane.domain(dir)).isEqualTo(ShmDataPlane.domain(dir));
        assertThat(ShmDataPlane.domain(dir)).isNotEqualTo(ShmDataPlane.domain(other));
        assertThat(ShmDataPlane.domain(dir)).startsWith("boot=").contains(",pidns=", ",dir=");
    }

    @Test
    void shouldNameItsDomainAndDirectory() {
        ShmDataPlane plane = new ShmDataPlane(dir);
        assertThat(plane.domain()).isEqualTo(ShmDataPlane.domain(dir));
        assertThat(plane.description()).isEqualTo(dir.toString());
        assertThat(plane.transport()).isEqualTo(ShmTransportProvider.SHM);
    }

    @Test
    void shouldSayWhyADirectoryIsUnusable() {
        assertThat(ShmDataPlane.unusable(dir)).isNull();
        assertThat(ShmDataPlane.unusable(dir.resolve("missing")))
                .isEqualTo(dir.resolve("missing") + " is not a directory");
    }

    /**
     * A read-only file system is not writable even to root, who writes through permissions: the
     * worker then offers no shm (--transport auto falls back to tcp with this reason, --transport
     * shm refuses with it). Mounted here when the tests run as root (as CI does), else skipped.
     */
    @Test
    void shouldSayAReadOnlyDirectoryIsNotWritable() throws Exception {
        Path readOnly = dir.resolve("read-only");
        Files.createDirectories(readOnly);
        assumeTrue(
                "root".equals(System.getProperty("user.name"))
                        && run(
                                "mount",
                                "-t",
                                "tmpfs",
                                "-o",
                                "ro,size=64k",
                                "tmpfs",
                                readOnly.toString()),
                "not root, or no mount: a read-only tmpfs is needed");
        try {
            assertThat(ShmDataPlane.unusable(readOnly)).isEqualTo(readOnly + " is not writable");
        } finally {
            run("umount", readOnly.toString());
        }
    }

    private static boolean run(String... command) throws Exception {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor() == 0;
        } catch (IOException e) {
            return false;
        }
    }

    @Test
    void shouldFormTheBoundEpochsGroupAndRemoveItsFilesOnClose() throws Exception {
        GroupEpoch epoch = new GroupEpoch(3, 0, 2, 0x5eed, 10_000_000_000L);
        ShmDataPlane a = new ShmDataPlane(dir);
        ShmDataPlane b = new ShmDataPlane(dir);
        PlaneBinding bound = a.bind(epoch);
        assertThat(bound.address()).as("no address: the group id names the files").isEmpty();
        assertThat(bound.groupToken()).isEmpty();
        b.bind(epoch.as(1, 2));
        GroupPeers form = new GroupPeers(3, List.of(), new byte[0]);
        CompletableFuture<Communicator> second = CompletableFuture.supplyAsync(() -> b.form(form));
        try (Communicator c0 = a.form(form);
                Communicator c1 = second.join()) {
            assertThat(c0.transport()).isEqualTo(ShmTransportProvider.SHM);
            assertThat(c0.rank()).isZero();
            assertThat(c1.rank()).isEqualTo(1);
            CompletableFuture<Void> barrier = CompletableFuture.runAsync(c1::barrier);
            c0.barrier();
            barrier.join();
            try (var files = Files.list(dir)) {
                assertThat(files.count()).as("two files per rank").isEqualTo(4);
            }
        }
        try (var files = Files.list(dir)) {
            assertThat(files.toList()).isEmpty();
        }
    }

    @Test
    void shouldRefuseToFormAnEpochItDidNotBind() {
        ShmDataPlane plane = new ShmDataPlane(dir);
        plane.bind(new GroupEpoch(1, 0, 1, 7, 1_000_000_000L));
        assertThatThrownBy(() -> plane.form(new GroupPeers(2, List.of(), new byte[0])))
                .isInstanceOf(A2aException.class)
                .hasMessage("form.epoch: 2 was never bound on this worker");
    }
}
