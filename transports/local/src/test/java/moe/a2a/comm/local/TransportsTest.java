package moe.a2a.comm.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.DataPlane;
import moe.a2a.comm.GroupEpoch;
import moe.a2a.comm.GroupPeers;
import moe.a2a.comm.PlaneSettings;
import moe.a2a.comm.TransportProvider;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import org.junit.jupiter.api.Test;

/**
 * The registry finds every provider on the class path through {@code ServiceLoader}: the local
 * transport of this module and a transport plugged in by a service entry alone, which then parses,
 * probes and forms a group like any other.
 */
class TransportsTest {
    private static final PlaneSettings SETTINGS =
            new PlaneSettings("host-a", 0, 1, null, Path.of("/dev/shm"), 0, null, null);

    @Test
    void shouldFindEveryProviderInOrder() {
        assertThat(Transports.transports(Transports.all()))
                .containsExactly(LocalTransportProvider.LOCAL, PluggedTransportProvider.PLUGGED);
        assertThat(Transports.transports(Transports.betweenProcesses()))
                .containsExactly(PluggedTransportProvider.PLUGGED);
        assertThat(Transports.require(TransportReach.THREADS).transport())
                .isEqualTo(LocalTransportProvider.LOCAL);
        assertThat(Transports.require(TransportReach.NETWORK).transport())
                .isEqualTo(PluggedTransportProvider.PLUGGED);
        assertThat(Transports.first(TransportReach.DEVICES)).isEmpty();
    }

    @Test
    void shouldParseLabelsAndNameTheFieldOtherwise() {
        assertThat(Transports.parse("--transport", "PLUGGED"))
                .isEqualTo(PluggedTransportProvider.PLUGGED);
        assertThatThrownBy(() -> Transports.parse("--transport", "tcp"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--transport: tcp (expected: one of local, plugged)");
        assertThatThrownBy(() -> Transports.require(TransportReach.DEVICES))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("DEVICES");
    }

    @Test
    void shouldProbeAndRefuseADataPlaneForThreads() {
        TransportProvider plugged = Transports.provider(PluggedTransportProvider.PLUGGED);
        assertThat(plugged.probe(SETTINGS).usable()).isTrue();
        assertThat(
                        plugged.probe(
                                        new PlaneSettings(
                                                "host-a",
                                                -1,
                                                1,
                                                null,
                                                Path.of("/x"),
                                                0,
                                                null,
                                                null))
                                .description())
                .isEqualTo("--data-port: -1");
        assertThatThrownBy(
                        () -> Transports.provider(LocalTransportProvider.LOCAL).dataPlane(SETTINGS))
                .isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void shouldFormAGroupThroughThePluggedProvidersDataPlanes() throws Exception {
        TransportProvider plugged = Transports.provider(PluggedTransportProvider.PLUGGED);
        try (DataPlane a = plugged.dataPlane(SETTINGS);
                DataPlane b = plugged.dataPlane(SETTINGS)) {
            GroupEpoch epoch = new GroupEpoch(1, 0, 2, 42, 5_000_000_000L);
            List<String> addresses =
                    List.of(a.bind(epoch).address(), b.bind(epoch.as(1, 2)).address());
            assertThat(addresses).containsExactly("host-a:0", "host-a:1");
            GroupPeers peers = new GroupPeers(1, addresses, new byte[0]);
            try (Communicator c0 = a.form(peers);
                    Communicator c1 = b.form(peers)) {
                assertThat(c0.transport()).isEqualTo(LocalTransportProvider.LOCAL);
                CompletableFuture<Void> other = CompletableFuture.runAsync(c1::barrier);
                c0.barrier();
                other.join();
                assertThat(c1.rank()).isEqualTo(1);
            }
        }
    }
}
