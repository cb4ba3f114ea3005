package moe.a2a.cli;

import io.grpc.Status;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import moe.a2a.client.MoeAsyncClient;
import moe.a2a.client.MoeClients;
import moe.a2a.comm.nccl.NcclTransportProvider;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.SafetensorsWeights;
import moe.a2a.experts.SeededWeights;
import moe.a2a.experts.WeightSource;
import moe.a2a.experts.hf.HfCheckpoint;
import moe.a2a.gpu.Bf16Weights;
import moe.a2a.kernels.DType;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import moe.a2a.v1.ModelInfo;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code moe-a2a client}: sends seeded Forward requests, reports throughput and latency, and checks
 * answers against the single-process reference when it can get the weights (the server's seeded
 * generator, the same safetensors path, or {@code --weights}).
 */
@Command(
        name = "client",
        mixinStandardHelpOptions = true,
        description =
                "Send seeded Forward requests to a server, check the answers, report tokens/s and latency.")
final class ClientCommand implements Callable<Integer> {
    @Option(
            names = "--target",
            defaultValue = "localhost:50051",
            description = "Server address (default: ${DEFAULT-VALUE}).")
    String target;

    @Option(
            names = "--requests",
            defaultValue = "100",
            description = "Requests to send (default: ${DEFAULT-VALUE}).")
    int requests;

    @Option(
            names = "--tokens",
            defaultValue = "512",
            description = "Tokens per request (default: ${DEFAULT-VALUE}).")
    int tokens;

    @Option(
            names = "--concurrency",
            defaultValue = "4",
            description = "Requests in flight (default: ${DEFAULT-VALUE}).")
    int concurrency;

    @Option(
            names = "--skew",
            defaultValue = "0",
            description =
                    "Zipf exponent of expert popularity; 0 is uniform (default: ${DEFAULT-VALUE}).")
    double skew;

    @Option(
            names = "--seed",
            defaultValue = "1",
            description = "Seed of the requests (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(
            names = "--dtype",
            defaultValue = "BF16",
            description = "Token dtype: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
    DType dtype;

    @Option(
            names = "--layer",
            description =
                    "The model's own index of the MoE layer to send to (default: its first MoE layer, as DescribeModel lists them).")
    Integer layer;

    @Option(
            names = "--routing",
            defaultValue = "TOPK",
            description =
                    "TOPK (client routes, Zipf), LOGITS (router logits) or GATE (model's gate) (default: ${DEFAULT-VALUE}).")
    ClientWorkload.Routing routing;

    @Option(
            names = "--verify",
            defaultValue = "4",
            description =
                    "Answers to check against the reference (scalar Java: seconds per answer on large models);"
                            + " -1 checks all, 0 none (default: ${DEFAULT-VALUE}).")
    int verify;

    @Option(
            names = "--weights",
            paramLabel = "PATH",
            description =
                    "The checkpoint directory or safetensors file the server loaded, for the reference (default: the path DescribeModel names, if it exists here).")
    Path weights;

    @Option(
            names = "--latency-log",
            paramLabel = "FILE",
            description =
                    "Write one CSV row per request: request, start_unix_ms, latency_ms, placement_version, status.")
    Path latencyLog;

    @Mixin ChannelOptions connection;

    @Override
    public Integer call() throws Exception {
        try (MoeAsyncClient client =
                MoeClients.builder(target).credentials(connection.credentials()).async()) {
            ModelInfo model = described(client);
            System.out.printf(
                    Locale.ROOT,
                    "server: %d experts in %d slots (placement version %d), hidden %d, ffn %d, top-%d, %d layers, %d ranks, transport %s, dispatch %s, weights %s%n",
                    model.getExperts(),
                    model.getSlots(),
                    model.getPlacementVersion(),
                    model.getHidden(),
                    model.getFfn(),
                    model.getTopK(),
                    model.getLayers(),
                    model.getWorldSize(),
                    model.getTransport(),
                    model.getDispatchDtype(),
                    model.getWeightsSource());
            System.out.printf(
                    Locale.ROOT,
                    "model: %s, gate %s, MoE layers %s, expert weights %s%n",
                    model.getArchitecture(),
                    model.getGate(),
                    model.getMoeLayersList(),
                    model.getWeightFormat());
            ClientWorkload workload =
                    new ClientWorkload(
                            model,
                            tokens,
                            dtype,
                            routing,
                            skew,
                            seed,
                            layer != null
                                    ? layer
                                    : model.getMoeLayersCount() > 0 ? model.getMoeLayers(0) : 0);
            int toVerify = verify < 0 ? requests : Math.min(verify, requests);
            List<ForwardResponse> kept = new ArrayList<>();
            for (int i = 0; i < toVerify; i++) {
                kept.add(null);
            }
            Histogram latency = new ConcurrentHistogram(TimeUnit.MINUTES.toMicros(10), 3);
            AtomicInteger failed = new AtomicInteger();
            StageTotals stages = new StageTotals();
            LatencyLog log = new LatencyLog(requests);
            // One thread makes the requests and keeps at most `concurrency` in flight; answers
            // arrive on gRPC's threads. A caller thread per request would compete with the
            // channel's own thread for the client's cores and add its waits to every latency.
            Semaphore inFlight = new Semaphore(concurrency);
            CountDownLatch answered = new CountDownLatch(requests);
            long start = System.nanoTime();
            for (int i = 0; i < requests; i++) {
                inFlight.acquire();
                final int index = i;
                ForwardRequest request = workload.request(i);
                final long startMs = System.currentTimeMillis();
                final long t0 = System.nanoTime();
                client.forward(request)
                        .whenComplete(
                                (response, error) -> {
                                    if (error != null) {
                                        Status status = Status.fromThrowable(error);
                                        log.record(
                                                index,
                                                startMs,
                                                (System.nanoTime() - t0) / 1000,
                                                0,
                                                status.getCode().name());
                                        failed.incrementAndGet();
                                        System.err.println(
                                                "request " + index + " failed: " + status);
                                    } else {
                                        long micros = (System.nanoTime() - t0) / 1000;
                                        latency.recordValue(micros);
                                        log.record(
                                                index,
                                                startMs,
                                                micros,
                                                response.getStats().getPlacementVersion(),
                                                "OK");
                                        stages.add(response.getStats());
                                        if (index < toVerify) {
                                            synchronized (kept) {
                                                kept.set(index, response);
                                            }
                                        }
                                    }
                                    inFlight.release();
                                    answered.countDown();
                                });
            }
            answered.await();
            double seconds = (System.nanoTime() - start) / 1e9;
            System.out.printf(
                    Locale.ROOT,
                    "%d requests x %d tokens, concurrency %d: %.0f tokens/s, %.1f requests/s%n",
                    requests,
                    tokens,
                    concurrency,
                    (double) (requests - failed.get()) * tokens / seconds,
                    (requests - failed.get()) / seconds);
            System.out.printf(
                    Locale.ROOT,
                    "latency ms: p50 %.2f  p90 %.2f  p99 %.2f  max %.2f%n",
                    latency.getValueAtPercentile(50) / 1000.0,
                    latency.getValueAtPercentile(90) / 1000.0,
                    latency.getValueAtPercentile(99) / 1000.0,
                    latency.getMaxValue() / 1000.0);
            System.out.println(stages.summary());
            if (latencyLog != null) {
                log.write(latencyLog);
                System.out.println("latency log: " + latencyLog);
            }
            int mismatches = verifyAnswers(model, workload, kept);
            if (failed.get() > 0) {
                System.out.println("failed requests: " + failed.get());
            }
            return failed.get() == 0 && mismatches == 0 ? 0 : 1;
        }
    }

    /** The server's model, or its failure as thrown (a status names what went wrong). */
    private static ModelInfo described(MoeAsyncClient client) {
        try {
            return client.describeModel().join();
        } catch (CompletionException e) {
            throw e.getCause() instanceof RuntimeException r ? r : e;
        }
    }

    private int verifyAnswers(
            ModelInfo model, ClientWorkload workload, List<ForwardResponse> kept) {
        if (kept.isEmpty()) {
            return 0;
        }
        WeightSource source = referenceWeights(model);
        if (source == null) {
            System.out.println(
                    "answers not checked: weights "
                            + model.getWeightsSource()
                            + " are not available here (pass --weights FILE)");
            return 0;
        }
        if (model.getTransport().equals(NcclTransportProvider.NCCL.label())) {
            // GPU ranks compute every dtype with their experts' weights rounded to bf16
            System.out.println(
                    "the cluster runs on nccl: answers are checked against the experts' weights"
                            + " rounded to bf16, as GPU ranks hold them");
            source = new Bf16Weights(source);
        }
        AnswerCheck check =
                new AnswerCheck(
                        source,
                        new ReferenceMoeLayer(source),
                        model.getExperts(),
                        model.getHidden(),
                        model.getTopK(),
                        model.getDispatchDtype().equals("fp8"),
                        model.getCapacityFactor(),
                        model.getWorldSize());
        int mismatches = 0;
        double worst = 0;
        int checked = 0;
        int unknowable = 0;
        for (int i = 0; i < kept.size(); i++) {
            if (kept.get(i) == null) {
                continue;
            }
            if (!check.checkable(kept.get(i))) {
                unknowable++;
                continue;
            }
            if (System.console() != null) {
                System.err.printf(
                        Locale.ROOT,
                        "\rchecking answer %d/%d against the reference",
                        checked + 1,
                        kept.size());
            }
            double ratio = check.worstRatio(workload.request(i), kept.get(i));
            worst = Math.max(worst, ratio);
            checked++;
            if (ratio > 1) {
                mismatches++;
                System.out.printf(
                        Locale.ROOT,
                        "request %d: answer differs from the reference (%.2fx tolerance)%n",
                        i,
                        ratio);
            }
        }
        if (System.console() != null) {
            System.err.print("\r" + " ".repeat(60) + "\r");
        }
        System.out.printf(
                Locale.ROOT,
                "checked %d answers against the reference: %d mismatches (worst error %.3f of tolerance)%n",
                checked,
                mismatches,
                worst);
        if (unknowable > 0) {
            System.out.printf(
                    Locale.ROOT,
                    "%d answers not checked: they shared a step under expert capacity (capacity factor %s), so which of their pairs were dropped depends on the step (--concurrency 1 checks every answer)%n",
                    unknowable,
                    model.getCapacityFactor());
        }
        return mismatches;
    }

    private WeightSource referenceWeights(ModelInfo model) {
        if (weights != null) {
            return open(weights);
        }
        String source = model.getWeightsSource();
        if (source.startsWith("seeded:")) {
            long s = Long.parseLong(source.substring("seeded:".length()));
            return new SeededWeights(
                    s, model.getExperts(), model.getHidden(), model.getFfn(), model.getLayers());
        }
        return Files.exists(Path.of(source)) ? open(Path.of(source)) : null;
    }

    /** A checkpoint directory or a safetensors file. */
    private static WeightSource open(Path path) {
        return Files.isDirectory(path) ? HfCheckpoint.open(path) : SafetensorsWeights.open(path);
    }
}
