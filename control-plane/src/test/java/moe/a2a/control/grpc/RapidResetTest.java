package moe.a2a.control.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link GrpcLimits#MAX_RST_FRAMES} on a real Netty server: a connection that opens and resets
 * streams past the limit gets GOAWAY, which ends a call it kept open; one that resets fewer keeps
 * its calls.
 */
@Timeout(60)
class RapidResetTest {
    final HealthStatusManager health = new HealthStatusManager();
    Server server;
    ManagedChannel channel;

    @BeforeEach
    void start() throws Exception {
        server =
                GrpcLimits.netty(
                                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                                InsecureServerCredentials.create())
                        .addService(health.getHealthService())
                        .build()
                        .start();
        channel =
                NettyChannelBuilder.forAddress(
                                "127.0.0.1", server.getPort(), InsecureChannelCredentials.create())
                        .build();
    }

    @AfterEach
    void stop() throws Exception {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }

    @Test
    void shouldSendGoAwayToAConnectionThatResetsStreamsWithoutEnd() throws Exception {
        Watch kept = watch();
        long started = System.nanoTime();
        resetStreams(3 * GrpcLimits.MAX_RST_FRAMES);
        Status ended = kept.ended.get(30, TimeUnit.SECONDS);
        System.out.printf(
                Locale.ROOT,
                "rapid reset: %d streams reset in %d ms; the kept call ended with %s%n",
                3 * GrpcLimits.MAX_RST_FRAMES,
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started),
                ended);
        // GOAWAY (ENHANCE_YOUR_CALM, too_many_rststreams), or the reset connection behind it
        assertThat(ended.getCode()).isIn(Status.Code.RESOURCE_EXHAUSTED, Status.Code.UNAVAILABLE);
    }

    @Test
    void shouldKeepAConnectionThatResetsFewerStreams() throws Exception {
        Watch kept = watch();
        assertThat(kept.statuses.poll(30, TimeUnit.SECONDS)).isEqualTo(ServingStatus.SERVING);
        resetStreams(GrpcLimits.MAX_RST_FRAMES / 2);
        health.setStatus("", ServingStatus.NOT_SERVING);
        assertThat(kept.statuses.poll(30, TimeUnit.SECONDS))
                .as("the kept call still hears the server")
                .isEqualTo(ServingStatus.NOT_SERVING);
        assertThat(kept.ended).isNotDone();
    }

    /** Opens and at once cancels {@code count} Watch calls: HEADERS then RST_STREAM, each. */
    private void resetStreams(int count) throws Exception {
        for (int i = 0; i < count; i++) {
            watch().call.cancel("reset", null);
        }
    }

    /** A Watch call on the whole server, its updates and its end. */
    private Watch watch() throws Exception {
        Watch w = new Watch();
        HealthGrpc.newStub(channel)
                .watch(
                        HealthCheckRequest.getDefaultInstance(),
                        new ClientResponseObserver<HealthCheckRequest, HealthCheckResponse>() {
                            @Override
                            public void beforeStart(
                                    ClientCallStreamObserver<HealthCheckRequest> call) {
                                w.call = call;
                            }

                            @Override
                            public void onNext(HealthCheckResponse r) {
                                w.statuses.add(r.getStatus());
                            }

                            @Override
                            public void onError(Throwable t) {
                                w.ended.complete(Status.fromThrowable(t));
                            }

                            @Override
                            public void onCompleted() {
                                w.ended.complete(Status.OK);
                            }
                        });
        return w;
    }

    private static final class Watch {
        ClientCallStreamObserver<HealthCheckRequest> call;
        final LinkedBlockingQueue<ServingStatus> statuses = new LinkedBlockingQueue<>();
        final CompletableFuture<Status> ended = new CompletableFuture<>();
    }
}
