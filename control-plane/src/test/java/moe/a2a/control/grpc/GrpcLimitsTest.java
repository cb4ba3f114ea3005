package moe.a2a.control.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ForwardingServerCallListener;
import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.MetadataUtils;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http2.DefaultHttp2PingFrame;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2GoAwayFrame;
import io.netty.util.ReferenceCountUtil;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link GrpcLimits} on a real Netty server. Rapid reset: a connection that opens and resets
 * streams past {@link GrpcLimits#MAX_RST_FRAMES} gets GOAWAY, which ends a call it kept open; one
 * that resets fewer keeps its calls. Keepalive: a client pinging far too often gets GOAWAY.
 * Metadata: headers past {@link GrpcLimits#MAX_INBOUND_METADATA_BYTES} are refused, smaller ones
 * served.
 */
@Timeout(60)
class GrpcLimitsTest {
    final HealthStatusManager health = new HealthStatusManager();
    final AtomicInteger open = new AtomicInteger();
    Server server;
    ManagedChannel channel;

    @BeforeEach
    void start() throws Exception {
        server =
                GrpcLimits.netty(
                                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                                InsecureServerCredentials.create())
                        .addService(
                                ServerInterceptors.intercept(
                                        health.getHealthService(), new OpenCalls(open)))
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

    /** 12 KiB of headers pass only because the limit was raised from grpc-java's 8 KiB. */
    @Test
    void shouldRefuseHeadersPastTheMetadataLimit() {
        Metadata.Key<String> padding =
                Metadata.Key.of("x-padding", Metadata.ASCII_STRING_MARSHALLER);
        for (int bytes :
                new int[] {
                    GrpcLimits.MAX_INBOUND_METADATA_BYTES * 3 / 4,
                    GrpcLimits.MAX_INBOUND_METADATA_BYTES + 1024
                }) {
            Metadata headers = new Metadata();
            headers.put(padding, "x".repeat(bytes));
            Status status;
            try {
                HealthGrpc.newBlockingStub(channel)
                        .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers))
                        .withDeadlineAfter(10, TimeUnit.SECONDS)
                        .check(HealthCheckRequest.getDefaultInstance());
                status = Status.OK;
            } catch (StatusRuntimeException e) {
                status = e.getStatus();
            }
            if (bytes <= GrpcLimits.MAX_INBOUND_METADATA_BYTES) {
                assertThat(status.getCode())
                        .as("%d bytes of headers", bytes)
                        .isEqualTo(Status.Code.OK);
            } else {
                assertThat(status.getCode())
                        .as("%d bytes of headers: %s", bytes, status)
                        .isNotEqualTo(Status.Code.OK);
            }
        }
    }

    /**
     * A raw HTTP/2 client pinging without calls, far more often than {@link
     * GrpcLimits#PERMIT_KEEPALIVE_SECONDS} allows: after a few pings the server says GOAWAY.
     */
    @Test
    void shouldSendGoAwayToAClientThatPingsTooOften() throws Exception {
        CompletableFuture<Http2GoAwayFrame> goAway = new CompletableFuture<>();
        EventLoopGroup loop = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try {
            Channel ch =
                    new Bootstrap()
                            .group(loop)
                            .channel(NioSocketChannel.class)
                            .handler(
                                    new ChannelInitializer<SocketChannel>() {
                                        @Override
                                        protected void initChannel(SocketChannel c) {
                                            c.pipeline()
                                                    .addLast(
                                                            Http2FrameCodecBuilder.forClient()
                                                                    .build(),
                                                            new ChannelInboundHandlerAdapter() {
                                                                @Override
                                                                public void channelRead(
                                                                        ChannelHandlerContext ctx,
                                                                        Object msg) {
                                                                    if (msg
                                                                            instanceof
                                                                            Http2GoAwayFrame g) {
                                                                        goAway.complete(g.retain());
                                                                    }
                                                                    ReferenceCountUtil.release(msg);
                                                                }
                                                            });
                                        }
                                    })
                            .connect(InetAddress.getLoopbackAddress(), server.getPort())
                            .sync()
                            .channel();
            for (int i = 0; i < 20 && !goAway.isDone(); i++) {
                ch.writeAndFlush(new DefaultHttp2PingFrame(i));
                Thread.sleep(50);
            }
            Http2GoAwayFrame frame = goAway.get(10, TimeUnit.SECONDS);
            try {
                assertThat(frame.errorCode()).isEqualTo(Http2Error.ENHANCE_YOUR_CALM.code());
                assertThat(frame.content().toString(StandardCharsets.US_ASCII))
                        .isEqualTo("too_many_pings");
            } finally {
                frame.release();
            }
            ch.close().sync();
        } finally {
            loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    /** grpc-java's default is no limit at all: the server would see every call. */
    @Test
    void shouldServeNoMoreConcurrentCallsPerConnectionThanTheLimit() throws Exception {
        int calls = GrpcLimits.MAX_CONCURRENT_CALLS_PER_CONNECTION + 50;
        List<Watch> watches = new ArrayList<>();
        for (int i = 0; i < calls; i++) {
            watches.add(watch());
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (open.get() < GrpcLimits.MAX_CONCURRENT_CALLS_PER_CONNECTION
                && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        // the calls past the limit wait in the client for a free stream, so they never arrive
        Thread.sleep(500);
        assertThat(open.get()).isEqualTo(GrpcLimits.MAX_CONCURRENT_CALLS_PER_CONNECTION);
        for (Watch w : watches) {
            w.call.cancel("done", null);
        }
    }

    /** Counts the calls the server has started and not yet ended. */
    private static final class OpenCalls implements ServerInterceptor {
        private final AtomicInteger open;

        OpenCalls(AtomicInteger open) {
            this.open = open;
        }

        @Override
        public <Q, R> ServerCall.Listener<Q> interceptCall(
                ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
            open.incrementAndGet();
            return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(
                    next.startCall(call, headers)) {
                @Override
                public void onCancel() {
                    open.decrementAndGet();
                    super.onCancel();
                }

                @Override
                public void onComplete() {
                    open.decrementAndGet();
                    super.onComplete();
                }
            };
        }
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
