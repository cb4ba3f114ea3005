package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import moe.a2a.v1.BenchEvent;
import moe.a2a.v1.BenchRequest;
import moe.a2a.v1.BenchResult;
import moe.a2a.v1.BenchServiceGrpc;
import moe.a2a.v1.DescribeModelRequest;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import moe.a2a.v1.ModelInfo;
import moe.a2a.v1.MoeServiceGrpc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A control plane and 4 worker JVMs on loopback: answers against the reference under 8 concurrent
 * clients, a worker killed with SIGKILL mid-load, its replacement, and a control plane restart that
 * the workers survive.
 */
@Timeout(600)
class DistributedIT {
    static final int E = 8;
    static final int H = 48;
    static final int I = 64;
    static final int K = 2;
    static final int LAYERS = 2;
    static final long SEED = 21;
    static final long EXCHANGE_TIMEOUT_MS = 3000;

    @TempDir Path dir;

    final SeededTraffic traffic = new SeededTraffic(SEED, E, H, I, K, LAYERS);

    @Test
    void shouldServeFailCleanlyAndRecoverWhenWorkersAndControlPlaneDie() throws Exception {
        int port = CliProcess.freePort();
        int clusterPort = CliProcess.freePort();
        List<CliProcess> processes = new ArrayList<>();
        ManagedChannel channel =
                NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        try {
            CliProcess cp = controlPlane(port, clusterPort);
            processes.add(cp);
            cp.awaitServingPort(Duration.ofSeconds(60));
            CliProcess[] workers = new CliProcess[4];
            for (int i = 0; i < 4; i++) {
                workers[i] = worker(clusterPort, "w" + i, i);
                processes.add(workers[i]);
            }
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(60), processes);
            MoeServiceGrpc.MoeServiceBlockingStub stub = MoeServiceGrpc.newBlockingStub(channel);

            // health Watch from the start: it must show the loss and the recovery below
            ConcurrentLinkedQueue<ServingStatus> watched = new ConcurrentLinkedQueue<>();
            HealthGrpc.newStub(channel)
                    .watch(
                            HealthCheckRequest.getDefaultInstance(),
                            new StreamObserver<>() {
                                @Override
                                public void onNext(HealthCheckResponse value) {
                                    watched.add(value.getStatus());
                                }

                                @Override
                                public void onError(Throwable t) {}

                                @Override
                                public void onCompleted() {}
                            });

            // 8 concurrent clients, every answer checked
            runClients(channel, 8, 4, 100);

            // a routing benchmark on the live workers' TCP group, between steps
            List<BenchEvent> events = new ArrayList<>();
            BenchServiceGrpc.newBlockingStub(channel)
                    .withDeadlineAfter(120, TimeUnit.SECONDS)
                    .run(
                            BenchRequest.newBuilder()
                                    .addWorkloads("decode")
                                    .setIters(3)
                                    .setWarmup(1)
                                    .build())
                    .forEachRemaining(events::add);
            BenchResult bench = events.get(events.size() - 1).getResult();
            assertThat(bench.getRan()).isTrue();
            assertThat(bench.getOk()).isTrue();
            assertThat(bench.getTransport()).isEqualTo("tcp");
            assertThat(bench.getFingerprint()).isEqualTo("2db17c1a8926b832");
            runClients(channel, 4, 1, 150);

            // SIGKILL rank 2's worker mid-load
            Load load = startLoad(stub, 5000);
            Thread.sleep(1500);
            load.killedAt().set(System.nanoTime());
            workers[2].kill();
            CliProcess.awaitHealth(
                    channel, ServingStatus.NOT_SERVING, Duration.ofSeconds(5), processes);
            Thread.sleep(1000);
            load.finish();
            ConcurrentLinkedQueue<String> wrong = load.wrong();
            ConcurrentLinkedQueue<String> failureMessages = load.failureMessages();
            ConcurrentLinkedQueue<Long> failureDelaysMs = load.failureDelaysMs();
            assertThat(wrong).as("wrong answers or statuses").isEmpty();
            assertThat(failureMessages).as("requests failed after the kill").isNotEmpty();
            assertThat(failureMessages)
                    .allMatch(m -> m.contains("rank 2") || m.contains("peer=2"), "names rank 2");
            assertThat(failureDelaysMs)
                    .allMatch(ms -> ms <= EXCHANGE_TIMEOUT_MS + 1000, "within timeout + 1 s");

            // a replacement takes rank 2; nothing else restarts
            long replacedAt = System.nanoTime();
            CliProcess replacement = worker(clusterPort, "w2-replacement", -1);
            processes.add(replacement);
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(60), processes);
            runClients(channel, 8, 2, 200);
            assertThat(List.copyOf(watched))
                    .as("health Watch across the lost and replaced worker")
                    .containsSubsequence(
                            ServingStatus.SERVING,
                            ServingStatus.NOT_SERVING,
                            ServingStatus.SERVING);
            System.out.printf(
                    Locale.ROOT,
                    "recovery: replacement worker started -> serving and answering in %d ms%n",
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - replacedAt));
            assertThat(workers[0].isAlive() && workers[1].isAlive() && workers[3].isAlive())
                    .isTrue();

            // the control plane dies and comes back: workers rejoin with backoff
            cp.kill();
            long restartedAt = System.nanoTime();
            CliProcess cp2 = controlPlane(port, clusterPort);
            processes.add(cp2);
            cp2.awaitServingPort(Duration.ofSeconds(60));
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(60), processes);
            runClients(channel, 4, 2, 300);
            System.out.printf(
                    Locale.ROOT,
                    "control plane restart: serving again in %d ms%n",
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - restartedAt));
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                p.close();
            }
        }
        for (CliProcess p : processes) {
            assertThat(p.isAlive()).as("no process left behind").isFalse();
        }
    }

    @Test
    void shouldServeWithoutAKilledWorkerWhoseExpertsHaveReplicas() throws Exception {
        int port = CliProcess.freePort();
        int clusterPort = CliProcess.freePort();
        List<CliProcess> processes = new ArrayList<>();
        ManagedChannel channel =
                NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        try {
            // 16 slots for 8 experts: every expert has a replica on another rank
            CliProcess cp = controlPlane(port, clusterPort, "--redundant-experts", "8");
            processes.add(cp);
            cp.awaitServingPort(Duration.ofSeconds(60));
            CliProcess[] workers = new CliProcess[4];
            for (int i = 0; i < 4; i++) {
                workers[i] = worker(clusterPort, "w" + i, i);
                processes.add(workers[i]);
            }
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(60), processes);
            MoeServiceGrpc.MoeServiceBlockingStub stub = MoeServiceGrpc.newBlockingStub(channel);
            runClients(channel, 4, 2, 400);

            Load load = startLoad(stub, 7000);
            Thread.sleep(1500);
            load.killedAt().set(System.nanoTime());
            workers[1].kill();
            cp.awaitOutput("degraded: serving with ranks [0, 2, 3] of 4", Duration.ofSeconds(15));
            Thread.sleep(1500);
            load.finish();
            assertThat(load.wrong()).as("wrong answers or statuses").isEmpty();
            assertThat(load.failureDelaysMs())
                    .as("failures only inside the detection window")
                    .allMatch(ms -> ms <= EXCHANGE_TIMEOUT_MS + 2000, "within timeout + 2 s");

            // degraded: three ranks answer every request right
            runClients(channel, 4, 3, 500);
            ModelInfo degraded = stub.describeModel(DescribeModelRequest.getDefaultInstance());
            assertThat(degraded.getPlacementVersionsList())
                    .as("the lost rank's shares moved to its experts' replicas")
                    .allMatch(v -> v >= 2);

            // a replacement takes rank 1: the group forms whole and the shares come back
            CliProcess replacement = worker(clusterPort, "w1-replacement", 1);
            processes.add(replacement);
            cp.awaitOutput("whole again", Duration.ofSeconds(60));
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(60), processes);
            runClients(channel, 4, 3, 600);
            assertThat(replacement.output()).contains("group epoch").doesNotContain("with ranks");
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                p.close();
            }
        }
    }

    /** Clients sending checked requests until {@link #finish}, recording failures. */
    private record Load(
            AtomicBoolean stop,
            AtomicLong killedAt,
            ConcurrentLinkedQueue<String> wrong,
            ConcurrentLinkedQueue<Long> failureDelaysMs,
            ConcurrentLinkedQueue<String> failureMessages,
            ExecutorService pool,
            List<Future<?>> clients) {
        void finish() throws Exception {
            stop.set(true);
            for (Future<?> f : clients) {
                f.get(120, TimeUnit.SECONDS);
            }
            pool.shutdown();
        }
    }

    /**
     * 8 clients sending until stopped; a failure must be UNAVAILABLE, and its delay is counted from
     * when it was sent or the kill, whichever is later.
     */
    private Load startLoad(MoeServiceGrpc.MoeServiceBlockingStub stub, long seedBase) {
        Load load =
                new Load(
                        new AtomicBoolean(),
                        new AtomicLong(Long.MAX_VALUE),
                        new ConcurrentLinkedQueue<>(),
                        new ConcurrentLinkedQueue<>(),
                        new ConcurrentLinkedQueue<>(),
                        Executors.newFixedThreadPool(8),
                        new ArrayList<>());
        for (int c = 0; c < 8; c++) {
            final int client = c;
            load.clients()
                    .add(
                            load.pool()
                                    .submit(
                                            () -> {
                                                for (int i = 0; !load.stop().get(); i++) {
                                                    send(stub, seedBase + client * 1000L + i, load);
                                                }
                                                return null;
                                            }));
        }
        return load;
    }

    private void send(MoeServiceGrpc.MoeServiceBlockingStub stub, long seed, Load load) {
        ForwardRequest request = traffic.request(seed);
        long sent = System.nanoTime();
        try {
            ForwardResponse response =
                    stub.withDeadlineAfter(60, TimeUnit.SECONDS).forward(request);
            String mismatch = traffic.mismatch(request, response, seed);
            if (mismatch != null) {
                load.wrong().add(mismatch);
            }
        } catch (StatusRuntimeException e) {
            if (e.getStatus().getCode() != Status.Code.UNAVAILABLE) {
                load.wrong().add("seed=" + seed + ": " + e.getStatus());
            }
            load.failureMessages().add(String.valueOf(e.getStatus().getDescription()));
            long from = Math.max(sent, load.killedAt().get());
            load.failureDelaysMs().add(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - from));
        }
    }

    private CliProcess controlPlane(int port, int clusterPort, String... extra) throws Exception {
        List<String> flags = new ArrayList<>(traffic.modelFlags());
        flags.addAll(
                List.of(
                        "--metrics-port",
                        "0",
                        "--exchange-timeout",
                        "PT" + EXCHANGE_TIMEOUT_MS / 1000 + "S",
                        "--heartbeat-timeout",
                        "PT2S"));
        flags.addAll(List.of(extra));
        return CliProcess.controlPlane(
                dir, "control-plane-" + System.nanoTime(), List.of(), port, clusterPort, 4, flags);
    }

    private CliProcess worker(int port, String id, int rank) throws Exception {
        return CliProcess.moeA2a(
                dir,
                id,
                "worker",
                "--control-plane",
                "127.0.0.1:" + port,
                "--metrics-port",
                "0",
                "--worker-id",
                id,
                "--transport",
                "tcp",
                "--rank",
                Integer.toString(rank));
    }

    private void runClients(ManagedChannel channel, int clients, int requestsEach, long seedBase)
            throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(clients);
        try {
            List<Future<String>> results = new ArrayList<>();
            for (int c = 0; c < clients; c++) {
                final int client = c;
                results.add(
                        pool.submit(
                                () -> {
                                    MoeServiceGrpc.MoeServiceBlockingStub stub =
                                            MoeServiceGrpc.newBlockingStub(channel);
                                    for (int i = 0; i < requestsEach; i++) {
                                        long seed = seedBase * 1000 + client * 100L + i;
                                        String mismatch = traffic.forwardAndCheck(stub, seed, 60);
                                        if (mismatch != null) {
                                            return mismatch;
                                        }
                                    }
                                    return null;
                                }));
            }
            for (Future<String> r : results) {
                assertThat(r.get(120, TimeUnit.SECONDS)).isNull();
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
