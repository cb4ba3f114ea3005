package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import moe.a2a.client.MoeAsyncClient;
import moe.a2a.client.MoeClient;
import moe.a2a.client.MoeClients;
import moe.a2a.control.cluster.EmbeddedCluster;
import moe.a2a.control.grpc.GrpcLimits;
import moe.a2a.control.grpc.MoeServer;
import moe.a2a.control.security.BearerAuth;
import moe.a2a.control.security.Role;
import moe.a2a.control.security.TlsFiles;
import moe.a2a.control.security.TokenFile;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.SeededWeights;
import moe.a2a.testing.TestCertificates;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java client's ({@code moe-a2a-client}) TLS and token options against a server with TLS and
 * client tokens, as {@code serve --tls-cert --auth-token-file} runs it: the right CA and token are
 * served, a missing or unknown token is refused UNAUTHENTICATED, and a client that does not trust
 * the server's authority does not connect.
 */
@Timeout(60)
class SecuredClientTest {
    static final String TOKEN = "client-token-0123456789abcdef";
    static final SeededWeights WEIGHTS = new SeededWeights(3, 8, 32, 48, 1);

    @TempDir static Path dir;

    static MoeServer server;
    static String target;
    static Path caFile;

    @BeforeAll
    static void start() throws Exception {
        TestCertificates ca = TestCertificates.authority("client-test-ca");
        caFile = ca.writeCertificate(dir, "ca.pem");
        TestCertificates.Leaf cert = ca.issue(dir, "server");
        TlsFiles tls =
                TlsFiles.load(cert.certificate(), cert.key(), caFile, Duration.ofSeconds(60));
        Path tokens = Files.writeString(dir.resolve("tokens"), "client " + TOKEN + "\n");
        server =
                MoeServer.start(
                        GrpcLimits.netty(new InetSocketAddress("127.0.0.1", 0), tls.server(false))
                                .intercept(
                                        new BearerAuth(
                                                TokenFile.open(tokens),
                                                Role.CLIENT,
                                                "the client port")),
                        new EmbeddedCluster(
                                new ModelConfig(8, 32, 48, 2, 1),
                                WEIGHTS,
                                2,
                                TimeUnit.SECONDS.toNanos(10)),
                        WEIGHTS,
                        new MoeServer.Settings(8192, 64, 1 << 20, 1 << 24, 2, 0, 0),
                        new SimpleMeterRegistry(),
                        true);
        target = "localhost:" + server.port();
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    @Test
    void shouldServeTheRightAuthorityAndTokenOnly() throws Exception {
        try (MoeClient client = MoeClients.builder(target).tls(caFile).token(TOKEN).blocking()) {
            assertThat(client.describeModel().getExperts()).isEqualTo(8);
        }
        Path tokenFile = Files.writeString(dir.resolve("my-token"), TOKEN + "\n");
        try (MoeAsyncClient client =
                MoeClients.builder(target).tls(caFile).tokenFile(tokenFile).async()) {
            assertThat(client.describeModel().get(30, TimeUnit.SECONDS).getHidden()).isEqualTo(32);
        }
        try (MoeClient anonymous = MoeClients.builder(target).tls(caFile).blocking()) {
            assertThatThrownBy(anonymous::describeModel)
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e ->
                                    assertThat(e.getStatus().getCode())
                                            .isEqualTo(Status.Code.UNAUTHENTICATED));
        }
        try (MoeClient wrong =
                MoeClients.builder(target)
                        .tls(caFile)
                        .token("not-the-token-0123456789")
                        .blocking()) {
            assertThatThrownBy(wrong::describeModel)
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e ->
                                    assertThat(e.getStatus().getCode())
                                            .isEqualTo(Status.Code.UNAUTHENTICATED));
        }
        Path otherCa = TestCertificates.authority("other-ca").writeCertificate(dir, "other.pem");
        try (MoeClient untrusting =
                MoeClients.builder(target).tls(otherCa).token(TOKEN).blocking()) {
            assertThatThrownBy(untrusting::describeModel)
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e ->
                                    assertThat(e.getStatus().getCode())
                                            .isEqualTo(Status.Code.UNAVAILABLE));
        }
    }
}
