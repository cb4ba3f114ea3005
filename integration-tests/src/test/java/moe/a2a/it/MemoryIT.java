package moe.a2a.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import moe.a2a.v1.MoeServiceGrpc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A server with too little memory for the requests it gets: {@code serve} at -Xmx160m (direct
 * memory capped at the same), sent requests of 8,192 tokens of 1,024 fp32 channels (32 MiB each)
 * one at a time, each on a connection of its own, while a checked client sends small requests on
 * another. Each big request fails with a status that says so (or is answered right), the small
 * requests keep being answered right, and the process lives: running out of heap or direct memory
 * fails the request, not the process.
 */
@Timeout(300)
class MemoryIT {
    static final int BIG_TOKENS = 8192;
    static final int BIG_REQUESTS = 4;

    /**
     * What a request the server cannot hold may end with: RESOURCE_EXHAUSTED when its step ran out
     * of memory; INTERNAL, UNAVAILABLE or CANCELLED when gRPC's transport did, reading it off the
     * connection (which it then closes) or writing its answer.
     */
    static final Set<Status.Code> OUT_OF_MEMORY =
            Set.of(
                    Status.Code.RESOURCE_EXHAUSTED,
                    Status.Code.INTERNAL,
                    Status.Code.UNAVAILABLE,
                    Status.Code.CANCELLED);

    @TempDir Path dir;

    final SeededTraffic traffic = new SeededTraffic(41, 8, 1024, 512, 2, 1);

    @Test
    void shouldFailRequestsTooBigForTheHeapAndServeTheOthers() throws Exception {
        int port = CliProcess.freePort();
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "serve",
                                "--port",
                                Integer.toString(port),
                                "--world-size",
                                "2",
                                "--metrics-port",
                                "0"));
        args.addAll(traffic.modelFlags());
        ManagedChannel small =
                NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        try (CliProcess server =
                CliProcess.moeA2a(dir, "serve", List.of("-Xmx160m"), args.toArray(String[]::new))) {
            CliProcess.awaitHealth(
                    small, ServingStatus.SERVING, Duration.ofSeconds(60), List.of(server));
            CheckedLoad load = new CheckedLoad(traffic, small, 1, 1_000_000L, 60);
            load.awaitAnswers(10, () -> CliProcess.logs(List.of(server)));

            List<String> big = new ArrayList<>();
            for (int i = 0; i < BIG_REQUESTS; i++) {
                big.add(sendBig(port, i));
            }
            System.out.println("MemoryIT big requests: " + big);
            // the small request in flight as the last big one ended counts with the big ones
            load.awaitAnswers(1, () -> CliProcess.logs(List.of(server)));
            int failedBefore = load.failures().size();
            load.awaitAnswers(20, () -> CliProcess.logs(List.of(server)));
            load.stop();

            assertThat(big)
                    .as("big requests: answered right, or failed saying why")
                    .allSatisfy(o -> assertThat(o).matches("right|(" + codes() + "): .*"));
            assertThat(big)
                    .as("a step that cannot get its memory fails RESOURCE_EXHAUSTED, saying so")
                    .anySatisfy(
                            o ->
                                    assertThat(o)
                                            .startsWith(
                                                    "RESOURCE_EXHAUSTED: out of memory for this"
                                                            + " request's step"));
            assertThat(load.wrong()).as("small answers that differ from the reference").isEmpty();
            assertThat(load.failures())
                    .as("small requests failed once the big ones were done")
                    .hasSize(failedBefore);
            assertThat(server.isAlive()).as(server.output()).isTrue();
            assertThat(server.output()).doesNotContain("Exception in thread");
        } finally {
            small.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    /** Sends big request {@code i} on a connection of its own: "right", or "CODE: description". */
    private String sendBig(int port, int i) throws InterruptedException {
        ManagedChannel channel =
                NettyChannelBuilder.forAddress("127.0.0.1", port)
                        .usePlaintext()
                        .maxInboundMessageSize(64 << 20)
                        .build();
        try {
            ForwardRequest request = traffic.request(1 + 2L * i, BIG_TOKENS);
            ForwardResponse response =
                    MoeServiceGrpc.newBlockingStub(channel)
                            .withDeadlineAfter(60, TimeUnit.SECONDS)
                            .forward(request);
            String mismatch = traffic.mismatch(request, response, i);
            return mismatch == null ? "right" : "wrong: " + mismatch;
        } catch (StatusRuntimeException e) {
            return e.getStatus().getCode() + ": " + e.getStatus().getDescription();
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    private static String codes() {
        return String.join("|", OUT_OF_MEMORY.stream().map(Enum::name).sorted().toList());
    }
}
