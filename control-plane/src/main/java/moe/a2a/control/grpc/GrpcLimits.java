package moe.a2a.control.grpc;

import io.grpc.ServerCredentials;
import io.grpc.netty.NettyServerBuilder;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

/**
 * The HTTP/2 limits every moe-a2a gRPC server sets on purpose, so that one connection cannot
 * exhaust a server: rapid reset, keepalive abuse, unbounded concurrent calls and metadata. Inbound
 * message size (and decompression, which grpc bounds by the same size) is a flag ({@code
 * --max-request-bytes}). Stateless.
 */
public final class GrpcLimits {
    /**
     * HTTP/2 RST_STREAM frames a connection may send or cause per {@link #RST_WINDOW_SECONDS}
     * (grpc-java counts the server's own resets too, for calls it cancels); beyond it the server
     * answers GOAWAY (ENHANCE_YOUR_CALM, "too_many_rststreams") and closes the connection. The
     * rapid-reset attack opens and resets streams without end: one grpc-java client on loopback
     * reset 6,000 in 0.83 to 0.92 s here (GrpcLimitsTest). A legitimate client resets a stream for
     * every call it cancels or whose deadline passes: LeakSoakIT's four clients on one channel, a
     * fifth of whose calls end so, were cut off by 200 per 10 s in its short form and by 2,000 per
     * 10 s in its long form (about 550 calls a second).
     */
    public static final int MAX_RST_FRAMES = 1000;

    public static final int RST_WINDOW_SECONDS = 1;

    /**
     * Calls one connection may have open at once (grpc-java sets no limit); a client's further
     * calls wait for a free stream (GrpcLimitsTest).
     */
    public static final int MAX_CONCURRENT_CALLS_PER_CONNECTION = 1024;

    /**
     * A client pinging more often than this, or at all without calls open, gets GOAWAY
     * ("too_many_pings", GrpcLimitsTest); grpc-java's own default allows one ping per 5 minutes.
     */
    public static final int PERMIT_KEEPALIVE_SECONDS = 10;

    /**
     * Bytes of headers a call may send: twice grpc-java's default of 8 KiB, room for a bearer token
     * beside tracing headers; past it the call is refused (GrpcLimitsTest).
     */
    public static final int MAX_INBOUND_METADATA_BYTES = 16 * 1024;

    /**
     * The client port's HTTP/2 flow-control window ({@code --flow-control-window}), per stream and
     * per connection: how much of its requests a client may have sent before the server took them
     * in. A Forward call takes its queue slot at its headers ({@code AdmissionGate}); with
     * grpc-java's own window (1 MiB, grown to the bandwidth-delay product), a client refused under
     * overload had already sent each refused request whole, and those bytes held up the requests
     * that had slots: 64 callers of 128-token requests on one connection left admitted throughput
     * at 0.13-0.17x the unloaded run (windows of 256 KiB and 1 MiB: the same). With 64 KiB it was
     * 1.13-1.28x, with 16 KiB 1.39x; with the final client, 1.21-1.29x, against 0.55x with 1 MiB
     * (benchmarks/overload/overload.sh, docs/performance.md). The price: a connection moves at most
     * this many bytes per round trip, 64 KiB in 150 µs about 440 MB/s, so serving large requests
     * over long links wants it raised.
     */
    public static final int CLIENT_FLOW_CONTROL_WINDOW = 64 * 1024;

    /** The smallest {@code --flow-control-window}: HTTP/2's smallest frame. */
    public static final int MIN_FLOW_CONTROL_WINDOW = 16 * 1024;

    private GrpcLimits() {}

    /** A Netty server builder on {@code address}, with {@code credentials}, with these limits. */
    public static NettyServerBuilder netty(
            InetSocketAddress address, ServerCredentials credentials) {
        return NettyServerBuilder.forAddress(address, credentials)
                .maxRstFramesPerWindow(MAX_RST_FRAMES, RST_WINDOW_SECONDS)
                .maxConcurrentCallsPerConnection(MAX_CONCURRENT_CALLS_PER_CONNECTION)
                .permitKeepAliveTime(PERMIT_KEEPALIVE_SECONDS, TimeUnit.SECONDS)
                .permitKeepAliveWithoutCalls(false)
                .maxInboundMetadataSize(MAX_INBOUND_METADATA_BYTES);
    }
}
