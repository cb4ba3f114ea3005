package moe.a2a.control.grpc;

import static moe.a2a.control.grpc.NcclClusterTest.E;
import static moe.a2a.control.grpc.NcclClusterTest.H;
import static moe.a2a.control.grpc.NcclClusterTest.I;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.CallCredentials;
import io.grpc.ChannelCredentials;
import io.grpc.CompositeChannelCredentials;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import moe.a2a.comm.tcp.DataPlaneTls;
import moe.a2a.comm.tcp.TcpDataPlane;
import moe.a2a.comm.tcp.TcpTransport;
import moe.a2a.comm.tcp.TcpTransportProvider;
import moe.a2a.control.cluster.RemoteCluster;
import moe.a2a.control.grpc.MoeGrpcServiceTest.Routing;
import moe.a2a.control.security.BearerAuth;
import moe.a2a.control.security.BearerToken;
import moe.a2a.control.security.Role;
import moe.a2a.control.security.TlsFiles;
import moe.a2a.control.security.TokenFile;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import moe.a2a.testing.TestCertificates;
import moe.a2a.v1.ClusterServiceGrpc;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.MoeServiceGrpc;
import moe.a2a.v1.WorkerMessage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A control plane as the CLI secures it, on loopback sockets: the client port with TLS and client
 * tokens, the cluster port with mutual TLS and worker tokens, two worker agents joining over it and
 * exchanging over a mutual-TLS data plane. Certificates are made by the test.
 */
@Timeout(120)
class SecuredPortsTest {
    static final String CLIENT_TOKEN = "client-token-0123456789abcdef";
    static final String WORKER_TOKEN = "worker-token-0123456789abcdef";
    static final Duration RELOAD = Duration.ofMillis(200);

    @TempDir static Path dir;
    static TestCertificates ca;
    static TestCertificates.Leaf serverCert;
    static TestCertificates.Leaf workerCert;
    static TestCertificates.Leaf strangerCert;
    static Path tokenFile;
    static TlsFiles serverTls;
    static TlsFiles workerTls;
    static RemoteCluster cluster;
    static ClusterServer clusterServer;
    static MoeServer server;
    static TcpTransport tcp;
    static AgentThreads agents;
    static final SeededWeights WEIGHTS = new SeededWeights(11, E, H, I, 1);

    @BeforeAll
    static void start() throws Exception {
        ca = TestCertificates.authority("cluster-ca");
        Path caFile = ca.writeCertificate(dir, "ca.pem");
        serverCert = ca.issue(dir, "control-plane");
        workerCert = ca.issue(dir, "worker");
        strangerCert = TestCertificates.authority("other-ca").issue(dir, "stranger");
        tokenFile = dir.resolve("tokens");
        Files.writeString(tokenFile, "client " + CLIENT_TOKEN + "\nworker " + WORKER_TOKEN + "\n");
        Path workerTokenFile = Files.writeString(dir.resolve("worker-token"), WORKER_TOKEN);
        serverTls = TlsFiles.load(serverCert.certificate(), serverCert.key(), caFile, RELOAD);
        workerTls = TlsFiles.load(workerCert.certificate(), workerCert.key(), caFile, RELOAD);
        TokenFile tokens = TokenFile.open(tokenFile);

        cluster = NcclClusterTest.remoteCluster(TcpTransportProvider.TCP);
        clusterServer =
                ClusterServer.start(
                        GrpcLimits.netty(loopback(), serverTls.server(true))
                                .intercept(new BearerAuth(tokens, Role.WORKER, "the cluster port")),
                        cluster);
        server =
                MoeServer.start(
                        GrpcLimits.netty(loopback(), serverTls.server(false))
                                .intercept(new BearerAuth(tokens, Role.CLIENT, "the client port")),
                        cluster,
                        WEIGHTS,
                        new MoeServer.Settings(8192, 64, 1 << 20, 1 << 20, 2, 0, 0),
                        new SimpleMeterRegistry(),
                        true);
        tcp = new TcpTransport(1);
        ManagedChannel toCluster =
                channel(
                        clusterServer.port(),
                        workerTls.channel(),
                        BearerToken.fromFile(workerTokenFile));
        agents =
                new AgentThreads(
                        toCluster,
                        2,
                        r ->
                                List.of(
                                        new TcpDataPlane(
                                                tcp,
                                                "127.0.0.1",
                                                0,
                                                DataPlaneTls.of(workerTls.dataPlane()))));
        agents.awaitFormed(cluster, "workers formed over mutual TLS");
    }

    @AfterAll
    static void stop() throws Exception {
        agents.close();
        server.close();
        clusterServer.close();
        tcp.close();
        serverTls.close();
        workerTls.close();
    }

    @Test
    void shouldAnswerAClientWithItsTokenOverTls() throws Exception {
        ManagedChannel channel = clientChannel(CLIENT_TOKEN);
        try {
            ReferenceMoeLayer reference = new ReferenceMoeLayer(WEIGHTS);
            SplittableRandom random = new SplittableRandom(77);
            for (int round = 0; round < 3; round++) {
                ForwardRequest request =
                        MoeGrpcServiceTest.request(
                                random, 0, 3 + 5 * round, DType.BF16, Routing.TOPK);
                NcclClusterTest.assertMatchesReference(
                        "round " + round,
                        reference,
                        request,
                        MoeServiceGrpc.newBlockingStub(channel).forward(request));
            }
        } finally {
            channel.shutdownNow();
        }
    }

    @Test
    void shouldRefuseClientsWithoutTheRightTokenButLetHealthProbesThrough() throws Exception {
        assertThat(describeStatus(clientChannel(null)))
                .satisfies(s -> assertThat(s.getCode()).isEqualTo(Status.Code.UNAUTHENTICATED))
                .satisfies(
                        s -> assertThat(s.getDescription()).startsWith("authorization: missing"));
        assertThat(describeStatus(clientChannel("not-a-token-of-this-server")))
                .satisfies(s -> assertThat(s.getCode()).isEqualTo(Status.Code.UNAUTHENTICATED))
                .satisfies(s -> assertThat(s.getDescription()).contains("unknown token"));
        assertThat(describeStatus(clientChannel(WORKER_TOKEN)))
                .satisfies(s -> assertThat(s.getCode()).isEqualTo(Status.Code.PERMISSION_DENIED))
                .satisfies(
                        s ->
                                assertThat(s.getDescription())
                                        .isEqualTo(
                                                "authorization: a worker token on the client port"
                                                        + " (expected: a client token)"));
        ManagedChannel anonymous = clientChannel(null);
        try {
            assertThat(
                            HealthGrpc.newBlockingStub(anonymous)
                                    .check(HealthCheckRequest.getDefaultInstance())
                                    .getStatus())
                    .isEqualTo(ServingStatus.SERVING);
        } finally {
            anonymous.shutdownNow();
        }
    }

    @Test
    void shouldRefusePlaintextOnTheTlsClientPort() throws Exception {
        assertThat(
                        describeStatus(
                                        channel(
                                                server.port(),
                                                InsecureChannelCredentials.create(),
                                                token(CLIENT_TOKEN)))
                                .getCode())
                .isEqualTo(Status.Code.UNAVAILABLE);
    }

    @Test
    void shouldKeepClientTokensAndUntrustedCertificatesOffTheClusterPort() throws Exception {
        assertThat(
                        sessionStatus(
                                channel(
                                        clusterServer.port(),
                                        workerTls.channel(),
                                        token(CLIENT_TOKEN))))
                .satisfies(s -> assertThat(s.getCode()).isEqualTo(Status.Code.PERMISSION_DENIED))
                .satisfies(
                        s ->
                                assertThat(s.getDescription())
                                        .contains("a client token on the cluster port"));
        try (TlsFiles stranger =
                        TlsFiles.load(
                                strangerCert.certificate(),
                                strangerCert.key(),
                                dir.resolve("ca.pem"),
                                RELOAD);
                TlsFiles noCertificate = TlsFiles.load(null, null, dir.resolve("ca.pem"), RELOAD)) {
            for (TlsFiles tls : List.of(stranger, noCertificate)) {
                assertThat(
                                sessionStatus(
                                                channel(
                                                        clusterServer.port(),
                                                        tls.channel(),
                                                        token(WORKER_TOKEN)))
                                        .getCode())
                        .isEqualTo(Status.Code.UNAVAILABLE);
            }
        }
    }

    @Test
    void shouldPresentARenewedCertificateAndAcceptRotatedTokensWithoutARestart() throws Exception {
        TestCertificates.Leaf renewed = ca.issue(dir, "control-plane-renewed");
        Files.copy(renewed.certificate(), serverCert.certificate(), REPLACE);
        Files.copy(renewed.key(), serverCert.key(), REPLACE);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        String seen = presentedSubject(server.port());
        while (!seen.contains("control-plane-renewed") && System.nanoTime() < deadline) {
            Thread.sleep(100);
            seen = presentedSubject(server.port());
        }
        assertThat(seen).contains("CN=control-plane-renewed");

        String rotated = "client-token-rotated-0123456789";
        writeTokens(rotated, 5);
        try {
            assertThat(describeStatus(clientChannel(CLIENT_TOKEN)).getCode())
                    .isEqualTo(Status.Code.UNAUTHENTICATED);
            assertThat(describeStatus(clientChannel(rotated)).getCode()).isEqualTo(Status.Code.OK);
        } finally {
            writeTokens(CLIENT_TOKEN, 10);
        }
    }

    /** Rewrites the token file, dated {@code seconds} ahead so that its change is seen at once. */
    private static void writeTokens(String clientToken, int seconds) throws Exception {
        Files.writeString(tokenFile, "client " + clientToken + "\nworker " + WORKER_TOKEN + "\n");
        Files.setLastModifiedTime(tokenFile, FileTime.from(Instant.now().plusSeconds(seconds)));
    }

    private static final java.nio.file.CopyOption REPLACE =
            java.nio.file.StandardCopyOption.REPLACE_EXISTING;

    private static InetSocketAddress loopback() {
        return new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
    }

    private static ManagedChannel clientChannel(String token) {
        return channel(server.port(), serverTls.channel(), token == null ? null : token(token));
    }

    private static ManagedChannel channel(
            int port, ChannelCredentials credentials, CallCredentials token) {
        return NettyChannelBuilder.forAddress(
                        "localhost",
                        port,
                        token == null
                                ? credentials
                                : CompositeChannelCredentials.create(credentials, token))
                .build();
    }

    private static CallCredentials token(String token) {
        try {
            return BearerToken.fromFile(
                    Files.writeString(Files.createTempFile(dir, "t", ""), token));
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** The status of DescribeModel on {@code channel}, which it then closes. */
    private static Status describeStatus(ManagedChannel channel) {
        try {
            MoeServiceGrpc.newBlockingStub(channel)
                    .withDeadlineAfter(10, TimeUnit.SECONDS)
                    .describeModel(moe.a2a.v1.DescribeModelRequest.getDefaultInstance());
            return Status.OK;
        } catch (StatusRuntimeException e) {
            return e.getStatus();
        } finally {
            channel.shutdownNow();
        }
    }

    /** How a worker session opened on {@code channel} ends, closing the channel. */
    private static Status sessionStatus(ManagedChannel channel) throws Exception {
        CompletableFuture<Status> ended = new CompletableFuture<>();
        try {
            StreamObserver<WorkerMessage> out =
                    ClusterServiceGrpc.newStub(channel)
                            .withDeadlineAfter(10, TimeUnit.SECONDS)
                            .session(
                                    new StreamObserver<ControlMessage>() {
                                        @Override
                                        public void onNext(ControlMessage m) {
                                            ended.complete(Status.OK);
                                        }

                                        @Override
                                        public void onError(Throwable t) {
                                            ended.complete(Status.fromThrowable(t));
                                        }

                                        @Override
                                        public void onCompleted() {
                                            ended.complete(Status.OK);
                                        }
                                    });
            out.onNext(WorkerMessage.getDefaultInstance());
            return ended.get(20, TimeUnit.SECONDS);
        } finally {
            channel.shutdownNow();
        }
    }

    /** The subject of the certificate the server on {@code port} presents to a new connection. */
    private static String presentedSubject(int port) throws Exception {
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, new TrustManager[] {ca.trustManager()}, null);
        try (SSLSocket socket =
                (SSLSocket)
                        context.getSocketFactory()
                                .createSocket(InetAddress.getLoopbackAddress(), port)) {
            socket.startHandshake();
            return ((X509Certificate) socket.getSession().getPeerCertificates()[0])
                    .getSubjectX500Principal()
                    .getName();
        }
    }
}
