package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import moe.a2a.dispatch.DType;
import moe.a2a.experts.LayerCheck;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.SeededWeights;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import moe.a2a.v1.MoeServiceGrpc;
import moe.a2a.v1.Tensor;
import moe.a2a.v1.TopK;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * SIGTERM to {@code serve} under load: health turns NOT_SERVING while the port is still open, every
 * request gets exactly one outcome (a right answer, or UNAVAILABLE), and the process exits 0 within
 * its grace period.
 */
@Timeout(120)
class ShutdownIT {
    static final int E = 8;
    static final int H = 32;
    static final int K = 2;
    static final long SEED = 13;

    @TempDir Path dir;

    final ReferenceMoeLayer reference = new ReferenceMoeLayer(new SeededWeights(SEED, E, H, 48, 1));

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
                        "48",
                        "--seed",
                        Long.toString(SEED),
                        "--world-size",
                        "2",
                        "--shutdown-grace",
                        "PT6S")) {
            int port = serve.awaitServingPort(Duration.ofSeconds(60));
            ManagedChannel channel =
                    NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
            ExecutorService pool = Executors.newFixedThreadPool(4);
            AtomicBoolean stop = new AtomicBoolean();
            ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
            ConcurrentLinkedQueue<Status.Code> outcomes = new ConcurrentLinkedQueue<>();
            try {
                List<Future<?>> clients = new ArrayList<>();
                for (int c = 0; c < 4; c++) {
                    final int client = c;
                    clients.add(
                            pool.submit(
                                    () -> {
                                        MoeServiceGrpc.MoeServiceBlockingStub stub =
                                                MoeServiceGrpc.newBlockingStub(channel);
                                        for (int i = 0; !stop.get(); i++) {
                                            long seed = client * 100_000L + i;
                                            ForwardRequest request = request(seed);
                                            try {
                                                ForwardResponse response =
                                                        stub.withDeadlineAfter(30, TimeUnit.SECONDS)
                                                                .forward(request);
                                                check(request, response, seed, wrong);
                                                outcomes.add(Status.Code.OK);
                                            } catch (StatusRuntimeException e) {
                                                outcomes.add(e.getStatus().getCode());
                                            }
                                        }
                                        return null;
                                    }));
                }
                Thread.sleep(1000);
                serve.terminate();
                // the port stays open a while: probes see the server going away
                ServingStatus during =
                        HealthGrpc.newBlockingStub(channel)
                                .withDeadlineAfter(2, TimeUnit.SECONDS)
                                .check(HealthCheckRequest.getDefaultInstance())
                                .getStatus();
                assertThat(during).isEqualTo(ServingStatus.NOT_SERVING);
                int exit = serve.awaitExit(Duration.ofSeconds(20));
                stop.set(true);
                for (Future<?> f : clients) {
                    f.get(60, TimeUnit.SECONDS);
                }
                assertThat(exit).as(serve.output()).isZero();
            } finally {
                stop.set(true);
                pool.shutdownNow();
                channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
            assertThat(wrong).as("OK answers that differ from the reference").isEmpty();
            assertThat(outcomes).contains(Status.Code.OK, Status.Code.UNAVAILABLE);
            assertThat(outcomes)
                    .as("every request: a right answer or UNAVAILABLE")
                    .allMatch(c -> c == Status.Code.OK || c == Status.Code.UNAVAILABLE);
        }
    }

    private static ForwardRequest request(long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        int tokens = 1 + random.nextInt(16);
        ByteBuffer data = ByteBuffer.allocate(tokens * H * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < tokens * H; i++) {
            data.putFloat(i * 4, (float) random.nextGaussian());
        }
        TopK.Builder topk = TopK.newBuilder().setK(K);
        for (int t = 0; t < tokens; t++) {
            int a = random.nextInt(E);
            int b = (a + 1 + random.nextInt(E - 1)) % E;
            topk.addExpertIds(a).addExpertIds(b).addWeights(0.75f).addWeights(0.25f);
        }
        return ForwardRequest.newBuilder()
                .setHiddenStates(
                        Tensor.newBuilder()
                                .setDtype(moe.a2a.v1.DType.FP32)
                                .addShape(tokens)
                                .addShape(H)
                                .setData(ByteString.copyFrom(data.array())))
                .setTopk(topk)
                .build();
    }

    private void check(
            ForwardRequest request,
            ForwardResponse response,
            long seed,
            ConcurrentLinkedQueue<String> wrong) {
        int tokens = request.getTopk().getExpertIdsCount() / K;
        float[] x = new float[tokens * H];
        request.getHiddenStates()
                .getData()
                .asReadOnlyByteBuffer()
                .order(ByteOrder.LITTLE_ENDIAN)
                .asFloatBuffer()
                .get(x);
        int[] ids = new int[tokens * K];
        float[] w = new float[tokens * K];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = request.getTopk().getExpertIds(i);
            w[i] = request.getTopk().getWeights(i);
        }
        float[] expected;
        synchronized (reference) {
            expected = reference.forward(0, x, tokens, K, ids, w);
        }
        float[] actual = new float[expected.length];
        response.getHiddenStates()
                .getData()
                .asReadOnlyByteBuffer()
                .order(ByteOrder.LITTLE_ENDIAN)
                .asFloatBuffer()
                .get(actual);
        try {
            LayerCheck.assertClose("seed=" + seed, DType.FP32, actual, expected, H);
        } catch (AssertionError e) {
            wrong.add(e.getMessage());
        }
    }
}
