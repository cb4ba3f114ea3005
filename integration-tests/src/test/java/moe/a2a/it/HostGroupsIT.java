package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.NettyChannelBuilder;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import moe.a2a.v1.DescribeModelRequest;
import moe.a2a.v1.ModelInfo;
import moe.a2a.v1.MoeServiceGrpc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Four worker processes on two "hosts": two shared-memory directories stand for two machines (each
 * directory is a shared-memory domain of its own), ranks dealt to them as the workers join (host 0
 * holds ranks 0 and 2, host 1 ranks 1 and 3). A control plane on {@code --transport auto} forms the
 * group across hosts: tcp rails between the hosts, shm inside each. Every answer equals the
 * reference, and rows flow only between ranks of one host and along the rails (the step byte
 * meters); a killed worker breaks the group, its replacement re-forms it across hosts, and the
 * answers are right again; after SIGTERM no group file is left in either directory.
 */
@Timeout(300)
class HostGroupsIT {
    private static final int WORLD = 4;

    /** Rank 0 and 2 on host 0, 1 and 3 on host 1; local index 0 for ranks 0 and 1. */
    private static final int[] HOST = {0, 1, 0, 1};

    private static final int[] LOCAL = {0, 0, 1, 1};

    private static final Pattern SENT =
            Pattern.compile("moe_a2a_transport_sent_bytes_total\\{([^}]*)} (\\S+)");

    @TempDir Path dir;

    @Test
    void shouldServeReferenceAnswersAcrossHostsAndReformAfterALostWorker() throws Exception {
        Path[] hostDirs = {
            Files.createDirectory(dir.resolve("host-0-shm")),
            Files.createDirectory(dir.resolve("host-1-shm"))
        };
        int port = CliProcess.freePort();
        int metricsPort = CliProcess.freePort();
        List<CliProcess> processes = new ArrayList<>();
        ManagedChannel channel =
                NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        try {
            CliProcess cp =
                    CliProcess.controlPlane(
                            dir,
                            "control-plane",
                            List.of(),
                            port,
                            0,
                            WORLD,
                            List.of(
                                    "--transport",
                                    "auto",
                                    "--metrics-port",
                                    Integer.toString(metricsPort),
                                    "--experts",
                                    "8",
                                    "--hidden",
                                    "32",
                                    "--ffn",
                                    "48",
                                    "--seed",
                                    "17"));
            processes.add(cp);
            cp.awaitServingPort(Duration.ofSeconds(60));
            int clusterPort = cp.awaitClusterPort(Duration.ofSeconds(1));
            CliProcess[] workers = new CliProcess[WORLD];
            for (int rank = 0; rank < WORLD; rank++) {
                workers[rank] =
                        CliProcess.shmWorker(
                                dir, "worker-" + rank, clusterPort, rank, hostDirs[rank % 2]);
                processes.add(workers[rank]);
            }
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(90), processes);
            assertThat(cp.output())
                    .contains("tcp across 2 hosts, shm inside each")
                    .contains("host 0 ranks 0 2")
                    .contains("host 1 ranks 1 3");
            ModelInfo info =
                    MoeServiceGrpc.newBlockingStub(channel)
                            .describeModel(DescribeModelRequest.getDefaultInstance());
            assertThat(info.getTransport()).isEqualTo("tcp");
            assertThat(info.getHosts()).isEqualTo(2);
            assertThat(CliProcess.shmGroupFiles(hostDirs[0]))
                    .as("host 0's group files")
                    .isNotEmpty();
            assertThat(CliProcess.shmGroupFiles(hostDirs[1]))
                    .as("host 1's group files")
                    .isNotEmpty();
            for (CliProcess worker : workers) {
                worker.awaitOutput(
                        "across 2 hosts × 2 ranks [[0, 2], [1, 3]]", Duration.ofSeconds(10));
            }
            CliProcess.checkSixAnswers(dir, "client-1", port);
            checkRowsStayOnHostsAndRails(metricsPort);

            workers[3].kill();
            CliProcess.awaitHealth(
                    channel, ServingStatus.NOT_SERVING, Duration.ofSeconds(60), processes);
            workers[3] =
                    CliProcess.shmWorker(dir, "worker-3-replaced", clusterPort, 3, hostDirs[1]);
            processes.add(workers[3]);
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(90), processes);
            assertThat(cp.output().split("tcp across 2 hosts, shm inside each", -1))
                    .as("the group formed across hosts again after the loss")
                    .hasSizeGreaterThanOrEqualTo(3);
            CliProcess.checkSixAnswers(dir, "client-2", port);

            for (CliProcess worker : workers) {
                worker.terminate();
            }
            for (CliProcess worker : workers) {
                assertThat(worker.awaitExit(Duration.ofSeconds(30)))
                        .as("a worker stopped by SIGTERM exits 0:\n%s", worker.output())
                        .isZero();
            }
            for (Path hostDir : hostDirs) {
                assertThat(CliProcess.shmGroupFiles(hostDir))
                        .as("files left in %s after a normal shutdown", hostDir)
                        .isEmpty();
            }
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                p.close();
            }
        }
    }

    /**
     * Bytes went from each rank to its host's ranks and its rail's peers, and never to a rank on
     * another host with another local index.
     */
    private static void checkRowsStayOnHostsAndRails(int metricsPort) throws Exception {
        String scrape =
                HttpClient.newHttpClient()
                        .send(
                                HttpRequest.newBuilder(
                                                URI.create(
                                                        "http://127.0.0.1:"
                                                                + metricsPort
                                                                + "/metrics"))
                                        .build(),
                                HttpResponse.BodyHandlers.ofString())
                        .body();
        double[][] sent = new double[WORLD][WORLD];
        Matcher m = SENT.matcher(scrape);
        while (m.find()) {
            int rank = Integer.parseInt(label(m.group(1), "rank"));
            int peer = Integer.parseInt(label(m.group(1), "peer"));
            sent[rank][peer] += Double.parseDouble(m.group(2));
        }
        for (int r = 0; r < WORLD; r++) {
            for (int p = 0; p < WORLD; p++) {
                if (r == p) {
                    continue;
                }
                String pair = "bytes from rank " + r + " to rank " + p;
                if (HOST[r] == HOST[p] || LOCAL[r] == LOCAL[p]) {
                    assertThat(sent[r][p]).as(pair + ": its host or its rail").isPositive();
                } else {
                    assertThat(sent[r][p]).as(pair + ": neither its host nor its rail").isZero();
                }
            }
        }
    }

    private static String label(String labels, String name) {
        Matcher m = Pattern.compile(name + "=\"([^\"]*)\"").matcher(labels);
        if (!m.find()) {
            throw new AssertionError("no " + name + " in {" + labels + "}");
        }
        return m.group(1);
    }
}
