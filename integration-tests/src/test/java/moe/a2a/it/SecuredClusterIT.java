package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.TlsChannelCredentials;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.NettyChannelBuilder;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import moe.a2a.testing.TestCertificates;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CLI's security flags end to end: a control plane with TLS, mutual TLS on its cluster port and
 * bearer tokens; workers with certificates and a worker token, exchanging over mutual TLS; a client
 * with the authority and a client token gets checked answers; without a token it is refused; a
 * worker whose certificate another authority signed never joins. Certificates are made here.
 */
@Timeout(300)
class SecuredClusterIT {
    @TempDir Path dir;

    @Test
    void shouldServeOnlyThoseWithTrustedCertificatesAndTokensWhileHealthStaysOpen()
            throws Exception {
        TestCertificates ca = TestCertificates.authority("cluster-ca");
        String caFile = ca.writeCertificate(dir, "ca.pem").toString();
        TestCertificates.Leaf cpCert = ca.issue(dir, "control-plane");
        TestCertificates.Leaf workerCert = ca.issue(dir, "worker");
        TestCertificates.Leaf stranger =
                TestCertificates.authority("other-ca").issue(dir, "stranger");
        Path tokens =
                Files.writeString(
                        dir.resolve("tokens"),
                        "client client-token-0123456789\nworker worker-token-0123456789\n");
        String clientToken =
                Files.writeString(dir.resolve("client-token"), "client-token-0123456789")
                        .toString();
        String workerToken =
                Files.writeString(dir.resolve("worker-token"), "worker-token-0123456789")
                        .toString();

        List<CliProcess> processes = new ArrayList<>();
        try {
            CliProcess cp =
                    CliProcess.moeA2a(
                            dir,
                            "control-plane",
                            "control-plane",
                            "--port",
                            "0",
                            "--cluster-port",
                            "0",
                            "--metrics-port",
                            "0",
                            "--world-size",
                            "2",
                            "--experts",
                            "8",
                            "--hidden",
                            "64",
                            "--ffn",
                            "32",
                            "--tls-cert",
                            cpCert.certificate().toString(),
                            "--tls-key",
                            cpCert.key().toString(),
                            "--tls-ca",
                            caFile,
                            "--auth-token-file",
                            tokens.toString());
            processes.add(cp);
            int port = cp.awaitServingPort(Duration.ofSeconds(60));
            int clusterPort = cp.awaitClusterPort(Duration.ofSeconds(1));
            for (int rank = 0; rank < 2; rank++) {
                processes.add(
                        worker(clusterPort, "worker-" + rank, workerCert, caFile, workerToken));
            }
            CliProcess intruder = worker(clusterPort, "stranger", stranger, caFile, workerToken);
            processes.add(intruder);
            ManagedChannel health =
                    NettyChannelBuilder.forAddress(
                                    "localhost",
                                    port,
                                    TlsChannelCredentials.newBuilder()
                                            .trustManager(new File(caFile))
                                            .build())
                            .build();
            try {
                CliProcess.awaitHealth(
                        health, ServingStatus.SERVING, Duration.ofSeconds(60), processes);
            } finally {
                health.shutdownNow();
            }

            try (CliProcess client =
                    client(port, "client", "--tls-ca", caFile, "--auth-token-file", clientToken)) {
                assertThat(client.awaitExit(Duration.ofSeconds(120))).as(client.output()).isZero();
                assertThat(client.output())
                        .contains("checked 8 answers against the reference: 0 mismatches");
            }
            try (CliProcess anonymous = client(port, "anonymous", "--tls-ca", caFile)) {
                assertThat(anonymous.awaitExit(Duration.ofSeconds(60))).isEqualTo(1);
                assertThat(anonymous.output()).contains("UNAUTHENTICATED: authorization: missing");
            }
            assertThat(intruder.awaitExit(Duration.ofSeconds(60)))
                    .as(intruder.output())
                    .isEqualTo(1);
            assertThat(intruder.output()).contains("control plane unreachable");
            assertThat(cp.output()).doesNotContain("stranger");
        } finally {
            for (CliProcess p : processes) {
                p.close();
            }
        }
    }

    private CliProcess worker(
            int clusterPort, String id, TestCertificates.Leaf cert, String caFile, String token)
            throws Exception {
        return CliProcess.moeA2a(
                dir,
                id,
                "worker",
                "--control-plane",
                "localhost:" + clusterPort,
                "--worker-id",
                id,
                "--metrics-port",
                "0",
                "--transport",
                "tcp",
                "--rejoin-timeout",
                "3s",
                "--tls-cert",
                cert.certificate().toString(),
                "--tls-key",
                cert.key().toString(),
                "--tls-ca",
                caFile,
                "--auth-token-file",
                token);
    }

    private CliProcess client(int port, String name, String... security) throws Exception {
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "client",
                                "--target",
                                "localhost:" + port,
                                "--requests",
                                "8",
                                "--tokens",
                                "24",
                                "--verify",
                                "-1"));
        args.addAll(List.of(security));
        return CliProcess.moeA2a(dir, name, args.toArray(String[]::new));
    }
}
