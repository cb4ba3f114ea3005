package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import moe.a2a.v1.MoeServiceGrpc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * SIGTERM under load, to {@code serve}, to a worker and to a control plane: health turns
 * NOT_SERVING while the port is still open, every request gets exactly one outcome (a right answer,
 * or UNAVAILABLE), each process exits 0 within its grace period, and no port is left bound.
 */
@Timeout(180)
class ShutdownIT {
    static final int E = 8;
    static final int H = 32;
    static final int I = 48;
    static final int K = 2;
    static final long SEED = 13;

    @TempDir Path dir;

    final SeededTraffic traffic = new SeededTraffic(SEED, E, H, I, K, 1);

    @Test
    void shouldDrainAndExitZeroOnSigterm() throws Exception {
        try (CliProcess serve =
                CliProcess.moeA2a(
                        dir,
                        "serve",
                        "serve",
                        "--port",
                        "0",
                        "--metrics-port",
                        "0",
                        "--experts",
                        Integer.toString(E),
                        "--hidden",
                        Integer.toString(H),
                        "--ffn",
                        Integer.toString(I),
                        "--seed",
                        Long.toString(SEED),
                        "--world-size",
                        "2",
                        "--shutdown-grace",
                        "PT6S")) {
            int port = serve.awaitServingPort(Duration.ofSeconds(60));
            ManagedChannel channel =
                    NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
            Load load = new Load(channel);
            try {
                load.awaitFirstAnswer(Duration.ofSeconds(60));
                serve.terminate();
                // the port stays open for half the grace: probes see the server going away
                ServingStatus seen = health(channel);
                for (int i = 0; i < 20 && seen == ServingStatus.SERVING; i++) {
                    Thread.sleep(50);
                    seen = health(channel);
                }
                assertThat(seen).isEqualTo(ServingStatus.NOT_SERVING);
                int exit = serve.awaitExit(Duration.ofSeconds(20));
                load.stop();
                assertThat(exit).as(serve.output()).isZero();
            } finally {
                load.stop();
                channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
            load.assertOneRightOutcomeEach();
            assertThat(portFree(port)).as("the gRPC port is free").isTrue();
        }
    }

    @Test
    void shouldLetAWorkerAndThenItsControlPlaneStopCleanly() throws Exception {
        int port = CliProcess.freePort();
        int clusterPort = CliProcess.freePort();
        List<CliProcess> processes = new ArrayList<>();
        ManagedChannel channel =
                NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        Load load = null;
        try {
            CliProcess cp =
                    CliProcess.controlPlane(
                            dir,
                            "control-plane",
                            List.of(),
                            port,
                            clusterPort,
                            2,
                            withFlags("--metrics-port", "0", "--shutdown-grace", "PT6S"));
            processes.add(cp);
            cp.awaitServingPort(Duration.ofSeconds(60));
            CliProcess w0 = CliProcess.tcpWorker(dir, clusterPort, 0);
            CliProcess w1 = CliProcess.tcpWorker(dir, clusterPort, 1);
            processes.add(w0);
            processes.add(w1);
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(60), processes);
            load = new Load(channel);
            load.awaitFirstAnswer(Duration.ofSeconds(60));

            w1.terminate();
            assertThat(w1.awaitExit(Duration.ofSeconds(20))).as(w1.output()).isZero();
            CliProcess.awaitHealth(
                    channel, ServingStatus.NOT_SERVING, Duration.ofSeconds(20), processes);

            cp.terminate();
            assertThat(cp.awaitExit(Duration.ofSeconds(20))).as(cp.output()).isZero();
            load.stop();
            w0.terminate();
            assertThat(w0.awaitExit(Duration.ofSeconds(20))).as(w0.output()).isZero();
            assertThat(portFree(port)).as("the client port is free").isTrue();
            assertThat(portFree(clusterPort)).as("the cluster port is free").isTrue();
        } finally {
            if (load != null) {
                load.stop();
            }
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                p.close();
            }
        }
        load.assertOneRightOutcomeEach();
    }

    private static ServingStatus health(ManagedChannel channel) {
        return HealthGrpc.newBlockingStub(channel)
                .withDeadlineAfter(2, TimeUnit.SECONDS)
                .check(HealthCheckRequest.getDefaultInstance())
                .getStatus();
    }

    private static boolean portFree(int port) {
        try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
            return s.isBound();
        } catch (IOException e) {
            return false;
        }
    }

    /** Four clients sending checked requests until stopped; one outcome kept per request. */
    private final class Load {
        final ExecutorService pool = Executors.newFixedThreadPool(4);
        final AtomicBoolean stop = new AtomicBoolean();
        final ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
        final ConcurrentLinkedQueue<Status.Code> outcomes = new ConcurrentLinkedQueue<>();
        final List<Future<?>> clients = new ArrayList<>();

        Load(ManagedChannel channel) {
            for (int c = 0; c < 4; c++) {
                final long base = c * 100_000L;
                clients.add(
                        pool.submit(
                                () -> {
                                    MoeServiceGrpc.MoeServiceBlockingStub stub =
                                            MoeServiceGrpc.newBlockingStub(channel);
                                    for (long seed = base; !stop.get(); seed++) {
                                        try {
                                            String mismatch =
                                                    traffic.forwardAndCheck(stub, seed, 30);
                                            if (mismatch != null) {
                                                wrong.add(mismatch);
                                            }
                                            outcomes.add(Status.Code.OK);
                                        } catch (StatusRuntimeException e) {
                                            outcomes.add(e.getStatus().getCode());
                                        }
                                    }
                                    return null;
                                }));
            }
        }

        /** Waits until some request was answered OK, so the drain has work in flight. */
        void awaitFirstAnswer(Duration timeout) throws InterruptedException {
            long deadline = System.nanoTime() + timeout.toNanos();
            while (!outcomes.contains(Status.Code.OK) && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
        }

        void stop() throws Exception {
            stop.set(true);
            for (Future<?> f : clients) {
                f.get(60, TimeUnit.SECONDS);
            }
            pool.shutdownNow();
        }

        void assertOneRightOutcomeEach() {
            assertThat(wrong).as("OK answers that differ from the reference").isEmpty();
            assertThat(outcomes).contains(Status.Code.OK, Status.Code.UNAVAILABLE);
            assertThat(outcomes)
                    .as("every request: a right answer or UNAVAILABLE")
                    .allMatch(c -> c == Status.Code.OK || c == Status.Code.UNAVAILABLE);
        }
    }

    /** The model's flags, then {@code more}. */
    private List<String> withFlags(String... more) {
        List<String> flags = new ArrayList<>(traffic.modelFlags());
        flags.addAll(List.of(more));
        return flags;
    }
}
