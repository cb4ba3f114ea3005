package moe.a2a.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.Transport;
import moe.a2a.v1.Bound;
import moe.a2a.v1.FormGroup;
import moe.a2a.v1.Join;
import moe.a2a.v1.PrepareGroup;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link ShmDataPlane} on its own: its domain tells directories apart, bind answers an empty Bound
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
    void shouldDescribeItselfInJoin() {
        ShmDataPlane plane = new ShmDataPlane(dir);
        Join.Builder join = Join.newBuilder();
        plane.describe(join);
        assertThat(join.getShmDomain()).isEqualTo(plane.domain());
        assertThat(join.getShmDirectory()).isEqualTo(dir.toString());
        assertThat(plane.transport()).isEqualTo(Transport.SHM);
    }

    @Test
    void shouldSayWhyADirectoryIsUnusable() {
        assertThat(ShmDataPlane.unusable(dir)).isNull();
        assertThat(ShmDataPlane.unusable(dir.resolve("missing")))
                .isEqualTo(dir.resolve("missing") + " is not a directory");
    }

    @Test
    void shouldFormTheBoundEpochsGroupAndRemoveItsFilesOnClose() throws Exception {
        PrepareGroup prepare =
                PrepareGroup.newBuilder()
                        .setEpoch(3)
                        .setGroupId(0x5eed)
                        .setExchangeTimeoutMs(10_000)
                        .build();
        ShmDataPlane a = new ShmDataPlane(dir);
        ShmDataPlane b = new ShmDataPlane(dir);
        Bound bound = a.bind(0, 2, prepare);
        assertThat(bound.getEpoch()).isEqualTo(3);
        assertThat(bound.getDataAddress()).as("no address: the group id names the files").isEmpty();
        b.bind(1, 2, prepare);
        FormGroup form = FormGroup.newBuilder().setEpoch(3).build();
        CompletableFuture<Communicator> second = CompletableFuture.supplyAsync(() -> b.form(form));
        try (Communicator c0 = a.form(form);
                Communicator c1 = second.join()) {
            assertThat(c0.transport()).isEqualTo(Transport.SHM);
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
        plane.bind(
                0,
                1,
                PrepareGroup.newBuilder()
                        .setEpoch(1)
                        .setGroupId(7)
                        .setExchangeTimeoutMs(1000)
                        .build());
        assertThatThrownBy(() -> plane.form(FormGroup.newBuilder().setEpoch(2).build()))
                .isInstanceOf(A2aException.class)
                .hasMessage("form.epoch: 2 was never bound on this worker");
    }
}
