package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import moe.a2a.v1.MoeServiceGrpc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A soak under Netty's paranoid leak detection: a control plane and two TCP workers serve a mix of
 * good requests, bad ones, expiring deadlines, cancelled and completed ForwardStream calls, while
 * one worker is killed and replaced. Every request gets exactly one outcome, every OK answer equals
 * the reference, no process reports a leak, and afterwards the control plane's and the surviving
 * worker's direct memory, Netty pooled memory, threads and open files are back near their baseline.
 * {@code -Dmoe.a2a.soak.iterations=N} (default 600) sets the length; the long form's figures are
 * printed for the report.
 */
@Timeout(1800)
class LeakSoakIT {
    static final int E = 8;
    static final int H = 32;
    static final int I = 32;
    static final int K = 2;
    static final int LAYERS = 2;
    static final long SEED = 9;
    static final int CLIENTS = 4;
    static final int ITERATIONS = Integer.getInteger("moe.a2a.soak.iterations", 600);
    static final int WARMUP_ITERATIONS = 50;

    /** What "back near the baseline" allows: pools and caches settle, they must not grow. */
    static final double MEMORY_SLACK_FACTOR = 1.5;

    static final long MEMORY_SLACK_BYTES = 16L << 20;
    static final int THREAD_SLACK = 8;
    static final int FILE_SLACK = 16;

    static final List<String> PARANOID = List.of("-Dio.netty.leakDetection.level=paranoid");
    static final HttpClient HTTP = HttpClient.newHttpClient();

    @TempDir Path dir;

    final SeededTraffic traffic = new SeededTraffic(SEED, E, H, I, K, LAYERS);
    final Map<Status.Code, AtomicLong> outcomes = new ConcurrentHashMap<>();
    final ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
    final AtomicLong checkedAnswers = new AtomicLong();

    /** One process's footprint, from its /metrics. */
    record Footprint(double directBytes, double nettyDirectBytes, double threads, double files) {
        static Footprint of(int metricsPort) throws Exception {
            String text =
                    HTTP.send(
                                    HttpRequest.newBuilder(
                                                    URI.create(
                                                            "http://127.0.0.1:"
                                                                    + metricsPort
                                                                    + "/metrics"))
                                            .build(),
                                    HttpResponse.BodyHandlers.ofString())
                            .body();
            return new Footprint(
                    sample(text, "jvm_buffer_memory_used_bytes", "id=\"direct\""),
                    sample(text, "netty_allocator_memory_used_bytes", "memory_type=\"direct\""),
                    sample(text, "jvm_threads_live_threads", ""),
                    sample(text, "process_files_open_files", ""));
        }

        private static double sample(String text, String name, String label) {
            Matcher m = Pattern.compile("(?m)^" + name + "\\{([^}]*)\\} (\\S+)$").matcher(text);
            while (m.find()) {
                if (m.group(1).contains(label)) {
                    return Double.parseDouble(m.group(2));
                }
            }
            throw new AssertionError("no " + name + "{" + label + "} in /metrics");
        }

        void assertBackNear(String who, Footprint baseline) {
            assertThat(directBytes)
                    .as("%s: direct memory after the soak (baseline %s)", who, baseline)
                    .isLessThanOrEqualTo(
                            baseline.directBytes * MEMORY_SLACK_FACTOR + MEMORY_SLACK_BYTES);
            assertThat(nettyDirectBytes)
                    .as(
                            "%s: Netty pooled direct memory after the soak (baseline %s)",
                            who, baseline)
                    .isLessThanOrEqualTo(
                            baseline.nettyDirectBytes * MEMORY_SLACK_FACTOR + MEMORY_SLACK_BYTES);
            assertThat(threads)
                    .as("%s: live threads after the soak (baseline %s)", who, baseline)
                    .isLessThanOrEqualTo(baseline.threads + THREAD_SLACK);
            assertThat(files)
                    .as("%s: open files after the soak (baseline %s)", who, baseline)
                    .isLessThanOrEqualTo(baseline.files + FILE_SLACK);
        }

        @Override
        public String toString() {
            return String.format(
                    Locale.ROOT,
                    "direct %.1f MiB, netty direct %.1f MiB, %d threads, %d files",
                    directBytes / (1 << 20),
                    nettyDirectBytes / (1 << 20),
                    (long) threads,
                    (long) files);
        }
    }

    @Test
    void shouldLeakNothingThroughGoodBadCancelledRequestsAndAWorkerKilled() throws Exception {
        int port = CliProcess.freePort();
        int clusterPort = CliProcess.freePort();
        int[] metrics = {CliProcess.freePort(), CliProcess.freePort(), CliProcess.freePort()};
        List<CliProcess> processes = new ArrayList<>();
        ManagedChannel channel =
                NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        try {
            CliProcess cp =
                    CliProcess.controlPlane(
                            dir,
                            "control-plane",
                            PARANOID,
                            port,
                            clusterPort,
                            2,
                            withFlags(
                                    "--metrics-port",
                                    Integer.toString(metrics[0]),
                                    "--exchange-timeout",
                                    "3s",
                                    "--heartbeat-timeout",
                                    "2s"));
            processes.add(cp);
            cp.awaitServingPort(Duration.ofSeconds(60));
            CliProcess w0 = worker(clusterPort, "w0", 0, metrics[1]);
            CliProcess w1 = worker(clusterPort, "w1", 1, metrics[2]);
            processes.add(w0);
            processes.add(w1);
            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(60), processes);
            // the warm-up runs the same mix, so that thread pools and buffer pools have grown
            ExecutorService pool = Executors.newFixedThreadPool(CLIENTS);
            List<Future<?>> clients = new ArrayList<>();
            for (int c = 0; c < CLIENTS; c++) {
                final int client = c;
                clients.add(pool.submit(() -> soak(channel, client + CLIENTS, WARMUP_ITERATIONS)));
            }
            for (Future<?> f : clients) {
                f.get(10, TimeUnit.MINUTES);
            }
            assertThat(wrong).as("wrong outcomes in the warm-up").isEmpty();
            outcomes.clear();
            checkedAnswers.set(0);
            Footprint cpBefore = Footprint.of(metrics[0]);
            Footprint w0Before = Footprint.of(metrics[1]);

            long started = System.nanoTime();
            clients.clear();
            for (int c = 0; c < CLIENTS; c++) {
                final int client = c;
                clients.add(pool.submit(() -> soak(channel, client, ITERATIONS)));
            }
            // one worker dies mid-soak and a replacement takes its rank
            while (outcomeCount() < ITERATIONS / 2) {
                Thread.sleep(20);
            }
            w1.kill();
            CliProcess replacement = worker(clusterPort, "w1-replacement", 1, 0);
            processes.add(replacement);
            for (Future<?> f : clients) {
                f.get(25, TimeUnit.MINUTES);
            }
            pool.shutdown();
            long soakMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);

            CliProcess.awaitHealth(
                    channel, ServingStatus.SERVING, Duration.ofSeconds(60), processes);
            goodRequests(channel, 50, 2);
            // leaked buffers are reported when they are collected and the detector runs again
            for (CliProcess p : List.of(cp, w0, replacement)) {
                new ProcessBuilder(
                                Path.of(System.getProperty("java.home"), "bin", "jcmd").toString(),
                                Long.toString(p.pid()),
                                "GC.run")
                        .inheritIO()
                        .start()
                        .waitFor(60, TimeUnit.SECONDS);
            }
            goodRequests(channel, 100, 3);
            Thread.sleep(1000);
            Footprint cpAfter = Footprint.of(metrics[0]);
            Footprint w0After = Footprint.of(metrics[1]);

            assertThat(wrong).as("requests with a wrong outcome or answer").isEmpty();
            assertThat(outcomeCount())
                    .as("every request has exactly one outcome")
                    .isEqualTo((long) ITERATIONS * CLIENTS);
            assertThat(count(Status.Code.UNAVAILABLE))
                    .as("requests caught by the worker's death")
                    .isPositive();
            for (CliProcess p : processes) {
                assertThat(p.output()).as("leak reports of %s", p).doesNotContain("LEAK:");
            }
            System.out.printf(
                    Locale.ROOT,
                    "soak: %d iterations by %d clients in %d ms, outcomes %s, %d answers checked,"
                            + " %.0f calls cancelled or expired per second (each resets a stream)%n"
                            + "  control plane: before %s; after %s%n"
                            + "  worker 0:      before %s; after %s%n",
                    ITERATIONS,
                    CLIENTS,
                    soakMs,
                    outcomes,
                    checkedAnswers.get(),
                    (count(Status.Code.CANCELLED) + count(Status.Code.DEADLINE_EXCEEDED))
                            * 1000.0
                            / soakMs,
                    cpBefore,
                    cpAfter,
                    w0Before,
                    w0After);
            cpAfter.assertBackNear("control plane", cpBefore);
            w0After.assertBackNear("worker 0", w0Before);
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            for (CliProcess p : processes) {
                p.close();
            }
        }
    }

    private long outcomeCount() {
        return outcomes.values().stream().mapToLong(AtomicLong::get).sum();
    }

    private long count(Status.Code code) {
        return outcomes.getOrDefault(code, new AtomicLong()).get();
    }

    private void outcome(Status.Code code) {
        outcomes.computeIfAbsent(code, c -> new AtomicLong()).incrementAndGet();
    }

    /** One client's share: a mix of request kinds, each with exactly one recorded outcome. */
    private void soak(ManagedChannel channel, int client, int iterations) {
        MoeServiceGrpc.MoeServiceBlockingStub stub = MoeServiceGrpc.newBlockingStub(channel);
        for (int i = 0; i < iterations; i++) {
            long seed = 1_000_000L * (client + 1) + i;
            ForwardRequest request = traffic.request(seed);
            try {
                switch (i % 10) {
                    case 5 -> expectRefused(stub, request.toBuilder().setLayer(LAYERS).build());
                    case 6 ->
                            expectRefused(
                                    stub,
                                    request.toBuilder()
                                            .setHiddenStates(
                                                    request.getHiddenStates().toBuilder()
                                                            .setShape(1, H + 1))
                                            .build());
                    case 7 ->
                            check(seed, request, stub.withDeadlineAfter(1, TimeUnit.MILLISECONDS));
                    case 8 -> stream(channel, seed, true);
                    case 9 -> stream(channel, seed, false);
                    default -> check(seed, request, stub.withDeadlineAfter(60, TimeUnit.SECONDS));
                }
            } catch (StatusRuntimeException e) {
                Status.Code code = e.getStatus().getCode();
                outcome(code);
                if (code == Status.Code.UNAVAILABLE) {
                    backOff();
                } else if (code != Status.Code.DEADLINE_EXCEEDED) {
                    wrong.add("seed " + seed + ": " + e.getStatus());
                }
            } catch (Exception e) {
                outcome(Status.Code.UNKNOWN);
                wrong.add("seed " + seed + ": " + e);
            }
        }
    }

    private void check(
            long seed, ForwardRequest request, MoeServiceGrpc.MoeServiceBlockingStub stub) {
        String mismatch = traffic.mismatch(request, stub.forward(request), seed);
        outcome(Status.Code.OK);
        checkedAnswers.incrementAndGet();
        if (mismatch != null) {
            wrong.add(mismatch);
        }
    }

    /** While the cluster re-forms, as a client retrying UNAVAILABLE would. */
    private static void backOff() {
        try {
            Thread.sleep(50);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void expectRefused(MoeServiceGrpc.MoeServiceBlockingStub stub, ForwardRequest bad) {
        try {
            stub.withDeadlineAfter(60, TimeUnit.SECONDS).forward(bad);
            outcome(Status.Code.OK);
            wrong.add("a bad request was answered: layer " + bad.getLayer());
        } catch (StatusRuntimeException e) {
            outcome(e.getStatus().getCode());
            if (e.getStatus().getCode() != Status.Code.INVALID_ARGUMENT) {
                wrong.add("a bad request got " + e.getStatus());
            }
        }
    }

    /**
     * Three requests on one ForwardStream call: answered in order and checked, or cancelled by this
     * client after the first answer (then CANCELLED is the call's one outcome).
     */
    private void stream(ManagedChannel channel, long seed, boolean cancel) throws Exception {
        List<ForwardRequest> requests = new ArrayList<>();
        for (int r = 0; r < 3; r++) {
            requests.add(traffic.request(seed * 3 + r));
        }
        CompletableFuture<Status> ended = new CompletableFuture<>();
        List<ForwardResponse> answers = new ArrayList<>();
        StreamObserver<ForwardRequest> out =
                MoeServiceGrpc.newStub(channel)
                        .withDeadlineAfter(60, TimeUnit.SECONDS)
                        .forwardStream(
                                new ClientResponseObserver<ForwardRequest, ForwardResponse>() {
                                    private ClientCallStreamObserver<ForwardRequest> call;

                                    @Override
                                    public void beforeStart(
                                            ClientCallStreamObserver<ForwardRequest> call) {
                                        this.call = call;
                                    }

                                    @Override
                                    public void onNext(ForwardResponse response) {
                                        synchronized (answers) {
                                            answers.add(response);
                                        }
                                        if (cancel) {
                                            call.cancel("the soak cancels", null);
                                        }
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
        for (ForwardRequest r : requests) {
            try {
                out.onNext(r);
            } catch (IllegalStateException e) {
                // the first answer came back before the last request went out, and this client
                // cancelled the call on it: grpc-java refuses to send on a cancelled call
                if (!cancel) {
                    throw e;
                }
                break;
            }
        }
        if (!cancel) {
            out.onCompleted();
        }
        Status status = ended.get(120, TimeUnit.SECONDS);
        outcome(status.getCode());
        if (status.getCode() == Status.Code.UNAVAILABLE) {
            backOff();
        }
        synchronized (answers) {
            for (int r = 0; r < answers.size(); r++) {
                String mismatch = traffic.mismatch(requests.get(r), answers.get(r), seed * 3 + r);
                checkedAnswers.incrementAndGet();
                if (mismatch != null) {
                    wrong.add(mismatch);
                }
            }
            boolean expected =
                    cancel
                            ? status.getCode() == Status.Code.CANCELLED
                            : status.isOk() && answers.size() == requests.size();
            if (!expected && status.getCode() != Status.Code.UNAVAILABLE) {
                wrong.add("stream " + seed + " (cancel=" + cancel + "): " + status);
            }
        }
    }

    private void goodRequests(ManagedChannel channel, int count, long seedBase) {
        MoeServiceGrpc.MoeServiceBlockingStub stub = MoeServiceGrpc.newBlockingStub(channel);
        for (int i = 0; i < count; i++) {
            long seed = seedBase * 100_000_000L + i;
            assertThat(traffic.forwardAndCheck(stub, seed, 60)).isNull();
        }
    }

    private CliProcess worker(int clusterPort, String id, int rank, int metricsPort)
            throws Exception {
        return CliProcess.moeA2a(
                dir,
                id,
                PARANOID,
                "worker",
                "--control-plane",
                "127.0.0.1:" + clusterPort,
                "--worker-id",
                id,
                "--metrics-port",
                Integer.toString(metricsPort),
                "--transport",
                "tcp",
                "--rank",
                Integer.toString(rank));
    }

    /** The model's flags, then {@code more}. */
    private List<String> withFlags(String... more) {
        List<String> flags = new ArrayList<>(traffic.modelFlags());
        flags.addAll(List.of(more));
        return flags;
    }
}
