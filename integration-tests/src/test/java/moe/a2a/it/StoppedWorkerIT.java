package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import moe.a2a.v1.MoeServiceGrpc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A worker stopped with SIGSTOP under load, not dead: its socket stays open and its peer's rows
 * stall in the socket, so it is found out by the exchange deadline and the missing heartbeats. The
 * requests of the stalled step fail naming it, a replacement takes its rank, and when the stopped
 * worker resumes (SIGCONT) it never disturbs the new group: no new epoch, every answer right; it
 * finds its session ended and is refused while it retries (every rank is taken), until a rank frees
 * or its --rejoin-timeout ends it.
 */
@Timeout(300)
class StoppedWorkerIT {
    static final int E = 8;
    static final int H = 64;
    static final int I = 64;
    static final int K = 2;
    static final int LAYERS = 1;
    static final long SEED = 13;

    @TempDir Path dir;

    final SeededTraffic traffic = new SeededTraffic(SEED, E, H, I, K, LAYERS);
    final ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
    final AtomicLong answered = new AtomicLong();

    @Test
    void shouldOutliveAStoppedWorkerThatComesBack() throws Exception {
        int port = CliProcess.freePort();
        int clusterPort = CliProcess.freePort();
        List<CliProcess> processes = new ArrayList<>();
        ManagedChannel channel =
                NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        AtomicBoolean running = new AtomicBoolean(true);
        List<Thread> clients = new ArrayList<>();
        try {
            CliProcess cp =
                    CliProcess.controlPlane(
                            dir,
                            "control-plane",
                            List.of(),
                            port,
                            clusterPort,
                            2,
                            withFlags(
                                    "--metrics-port",
                                    "0",
                                    "--exchange-timeout",
                                    "3s",
                                    "--heartbeat-timeout",
                                    "2s"));
            processes.add(cp);
            cp.awaitServingPort(Duration.ofSeconds(60));
            processes.add(CliProcess.tcpWorker(dir, clusterPort, 0));
            CliProcess stopped = CliProcess.tcpWorker(dir, clusterPort, 1);
            processes.add(stopped);
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(60), processes);
            for (int c = 0; c < 2; c++) {
                final long base = 1_000_000L * (c + 1);
                Thread t = new Thread(() -> load(channel, running, base), "client-" + c);
                t.start();
                clients.add(t);
            }
            Thread.sleep(1000);

            stopped.signal("STOP");
            CliProcess.awaitHealth(
                    channel, ServingStatus.NOT_SERVING, Duration.ofSeconds(30), processes);
            CliProcess replacement =
                    CliProcess.moeA2a(
                            dir,
                            "replacement",
                            "worker",
                            "--control-plane",
                            "127.0.0.1:" + clusterPort,
                            "--metrics-port",
                            "0",
                            "--transport",
                            "tcp",
                            "--rank",
                            "1");
            processes.add(replacement);
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(60), processes);
            long epochsBefore = epochs(cp);
            long answeredBefore = answered.get();
            int failuresBefore = failures.size();

            stopped.signal("CONT");
            Thread.sleep(8000);
            running.set(false);
            for (Thread t : clients) {
                t.join(60_000);
            }

            assertThat(wrong).as("answers that differ from the reference").isEmpty();
            assertThat(failures)
                    .as("failures while the worker was stopped")
                    .isNotEmpty()
                    .allSatisfy(f -> assertThat(f).startsWith("UNAVAILABLE"));
            assertThat(String.join("\n", failures))
                    .as("the stalled step's failure names the stopped rank")
                    .containsPattern("rank 1|peer=1");
            assertThat(failures.size())
                    .as("no failure after the stopped worker resumed")
                    .isEqualTo(failuresBefore);
            assertThat(answered.get())
                    .as("answers after the stopped worker resumed")
                    .isGreaterThan(answeredBefore);
            assertThat(epochs(cp))
                    .as("the resumed worker never started a new epoch")
                    .isEqualTo(epochsBefore);
            assertThat(replacement.isAlive()).isTrue();
            assertThat(stopped.output())
                    .as("the resumed worker tries to rejoin and is refused: its rank is taken")
                    .contains("session ended (UNAVAILABLE: no heartbeat for")
                    .contains("cluster full: worldSize=2, every rank is taken");
        } finally {
            running.set(false);
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                p.signal("CONT");
                p.close();
            }
        }
    }

    /** Sends requests until told to stop: answers checked, failures kept. */
    private void load(ManagedChannel channel, AtomicBoolean running, long base) {
        MoeServiceGrpc.MoeServiceBlockingStub stub = MoeServiceGrpc.newBlockingStub(channel);
        for (long seed = base; running.get(); seed++) {
            try {
                String mismatch = traffic.forwardAndCheck(stub, seed, 30);
                if (mismatch != null) {
                    wrong.add(mismatch);
                }
                answered.incrementAndGet();
            } catch (StatusRuntimeException e) {
                Status s = e.getStatus();
                failures.add(s.getCode() + ": " + s.getDescription());
                try {
                    Thread.sleep(100);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    /** How many group epochs the control plane has started. */
    private static long epochs(CliProcess cp) throws Exception {
        return cp.output().lines().filter(l -> l.contains("forming group: epoch=")).count();
    }

    /** The model's flags, then {@code more}. */
    private List<String> withFlags(String... more) {
        List<String> flags = new ArrayList<>(traffic.modelFlags());
        flags.addAll(List.of(more));
        return flags;
    }
}
