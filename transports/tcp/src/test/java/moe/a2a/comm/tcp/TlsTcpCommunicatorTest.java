package moe.a2a.comm.tcp;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.AbstractCommunicatorTest;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangeTimeoutException;
import moe.a2a.testing.TestCertificates;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The communicator contract over mutual TLS, and a rank the cluster does not trust kept out. */
class TlsTcpCommunicatorTest extends AbstractCommunicatorTest {
    static TcpTransport transport;
    static DataPlaneTls trusted;
    static DataPlaneTls stranger;

    @BeforeAll
    static void start(@TempDir Path dir) throws Exception {
        transport = new TcpTransport(2);
        TestCertificates cluster = TestCertificates.authority("cluster-ca");
        trusted =
                DataPlaneTls.of(cluster.issue(dir, "worker").keyManager(), cluster.trustManager());
        TestCertificates other = TestCertificates.authority("other-ca");
        stranger = DataPlaneTls.of(other.issue(dir, "stranger").keyManager(), other.trustManager());
    }

    @AfterAll
    static void stop() {
        transport.close();
    }

    @Override
    protected Communicator[] newGroup(int size, long timeoutNs) throws Exception {
        return TcpCommunicatorTest.group(transport, size, timeoutNs, rank -> trusted);
    }

    /** Point-to-point messages, run ahead of their posts too, then collectives, over TLS. */
    @Test
    void shouldKeepSequencesInStepWhenMessagesBetweenTwoRanksInterleaveWithCollectives()
            throws Exception {
        TcpCommunicatorTest.interleaveMessagesWithCollectives(
                TcpCommunicatorTest.group(
                        transport, 3, TimeUnit.SECONDS.toNanos(20), rank -> trusted));
    }

    @Test
    void shouldKeepOutARankWithACertificateTheClusterDoesNotTrust() {
        assertThatThrownBy(
                        () ->
                                TcpCommunicatorTest.group(
                                        transport,
                                        2,
                                        TimeUnit.SECONDS.toNanos(2),
                                        rank -> rank == 1 ? stranger : trusted))
                .isInstanceOf(ExchangeTimeoutException.class)
                .hasMessageContaining("waiting for a peer");
    }
}
