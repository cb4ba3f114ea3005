package moe.a2a.cli;

import io.grpc.InsecureServerCredentials;
import io.grpc.ServerCredentials;
import io.grpc.netty.NettyServerBuilder;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.function.Supplier;
import moe.a2a.bench.grpc.BenchGrpcService;
import moe.a2a.control.cluster.FirstPlacement;
import moe.a2a.control.cluster.RoutingRecorder;
import moe.a2a.control.cluster.StepModes;
import moe.a2a.control.grpc.GrpcLimits;
import moe.a2a.control.grpc.MoeServer;
import moe.a2a.control.security.BearerAuth;
import moe.a2a.control.security.Role;
import moe.a2a.control.security.TlsFiles;
import moe.a2a.control.security.TokenFile;
import moe.a2a.dispatch.Placement;
import moe.a2a.metrics.MetricsEndpoint;
import moe.a2a.metrics.ProcessMetrics;
import org.jspecify.annotations.Nullable;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Option;

/** The flags shared by the server commands ({@code serve}, {@code control-plane}). */
final class ServerOptions {
    /** What the client port serves beside MoeService: BenchService, on the serving ranks. */
    static final List<MoeServer.ClientService> CLIENT_SERVICES = List.of(BenchGrpcService::new);

    @Option(
            names = "--host",
            defaultValue = "127.0.0.1",
            description =
                    "Address to bind gRPC and metrics to; other than loopback, the gRPC ports need --tls-cert or --plaintext (default: ${DEFAULT-VALUE}).")
    String host;

    @Option(
            names = "--plaintext",
            description =
                    "Serve gRPC unencrypted on a non-loopback --host (on loopback it is the default without --tls-cert).")
    boolean plaintext;

    @Option(
            names = "--tls-cert",
            paramLabel = "FILE",
            description =
                    "PEM certificate chain the gRPC ports present (TLS); read again every 30 s, so a renewed file is used without a restart.")
    Path tlsCert;

    @Option(
            names = "--tls-key",
            paramLabel = "FILE",
            description = "PKCS#8 PEM private key of --tls-cert.")
    Path tlsKey;

    @Option(
            names = "--tls-ca",
            paramLabel = "FILE",
            description =
                    "PEM certificate authority whose certificates workers must present on the cluster port (mutual TLS); required with --tls-cert on control-plane.")
    Path tlsCa;

    @Option(
            names = "--auth-token-file",
            paramLabel = "FILE",
            description =
                    "Bearer tokens, one \"ROLE TOKEN\" per line (ROLE client or worker, # comments); every call but health must carry one of its port's role. Read again when the file changes.")
    Path authTokenFile;

    @Option(
            names = "--port",
            defaultValue = "50051",
            description = "gRPC port; 0 picks a free one (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(
            names = "--metrics-port",
            defaultValue = "9464",
            description = "Prometheus /metrics port; 0 turns it off (default: ${DEFAULT-VALUE}).")
    int metricsPort;

    @Option(
            names = "--world-size",
            defaultValue = "4",
            description = "Ranks (default: ${DEFAULT-VALUE}).")
    int worldSize;

    @Option(
            names = "--redundant-experts",
            defaultValue = "0",
            description =
                    "R extra expert slots: experts + R slots over the ranks, a multiple of the world size; the extra slots hold replicas that share their expert's tokens (default: ${DEFAULT-VALUE}).")
    int redundantExperts;

    @Option(
            names = "--rebalance-every",
            defaultValue = "0",
            description =
                    "Live rebalancing: every STEPS steps of a layer, plan its placement from the expert loads of those steps and switch to it once every rank has loaded it, if it lowers the predicted rank imbalance by 5 %% or more; 0 never (default: ${DEFAULT-VALUE}).",
            paramLabel = "STEPS")
    int rebalanceEvery;

    @Option(
            names = "--capacity-factor",
            defaultValue = "0",
            description =
                    "Expert capacity: each expert takes at most ceil(CF * T * K / E) of a step's token-expert pairs, the highest-weight ones of each rank's share (the rest dropped, other weights not renormalised); 0 is dropless (default: ${DEFAULT-VALUE}).",
            paramLabel = "CF")
    double capacityFactor;

    @Option(
            names = "--mode",
            defaultValue = "normal",
            paramLabel = "auto|normal|low-latency",
            description =
                    "How steps exchange: normal (counts first, then exactly the rows), low-latency"
                            + " (fixed regions of --ll-max-tokens rows a rank, no count exchange;"
                            + " a step that would put more on a rank is refused), or auto"
                            + " (low-latency when every rank's share fits, else normal) (default:"
                            + " ${DEFAULT-VALUE}).")
    String mode;

    @Option(
            names = "--ll-max-tokens",
            defaultValue = "128",
            paramLabel = "T",
            description =
                    "Tokens a rank that a low-latency step has room for (default: ${DEFAULT-VALUE}).")
    int llMaxTokens;

    @Option(
            names = "--record-routing",
            description =
                    "Record the expert ids that served tokens choose, per step and layer, into FILE (a routing trace: docs/cli.md), for bench --routing-trace and eplb --routing-trace. The file is rewritten whole every 256 recorded steps and at shutdown.",
            paramLabel = "FILE")
    @Nullable Path recordRouting;

    @Option(
            names = "--record-steps",
            defaultValue = "256",
            description =
                    "With --record-routing: the trace keeps the last N recorded steps, in memory until written (4 bytes per token and expert chosen) (default: ${DEFAULT-VALUE}).",
            paramLabel = "N")
    int recordSteps;

    @Option(
            names = "--record-every",
            defaultValue = "1",
            description =
                    "With --record-routing: record one step in K (default: ${DEFAULT-VALUE}, every step).",
            paramLabel = "K")
    int recordEvery;

    @Option(
            names = "--max-request-bytes",
            defaultValue = "67108864",
            description = "Largest accepted request message (default: ${DEFAULT-VALUE}).")
    int maxRequestBytes;

    @Option(
            names = "--flow-control-window",
            defaultValue = "65536",
            description =
                    "HTTP/2 flow-control window of the client port, per call and per connection, in bytes: how much of its requests a client may send before the server takes them in. Small keeps refused requests' bytes from holding up admitted ones under overload; a connection moves at most this per round trip, so raise it for large requests over long links (default: ${DEFAULT-VALUE}, at least 16384).")
    int flowControlWindow;

    @Option(
            names = "--max-batch-tokens",
            defaultValue = "8192",
            description = "Most tokens batched into one step (default: ${DEFAULT-VALUE}).")
    int maxBatchTokens;

    @Option(
            names = "--max-queued-requests",
            defaultValue = "1024",
            description =
                    "Queued requests beyond this get RESOURCE_EXHAUSTED (default: ${DEFAULT-VALUE}).")
    int maxQueuedRequests;

    @Option(
            names = "--max-queued-tokens",
            defaultValue = "65536",
            description =
                    "Tokens of the waiting requests beyond which a new one gets RESOURCE_EXHAUSTED at once (default: ${DEFAULT-VALUE}).")
    long maxQueuedTokens;

    @Option(
            names = "--max-steps-in-flight",
            defaultValue = "2",
            description =
                    "Steps handed to the ranks before the oldest is answered, so transfers overlap (default: ${DEFAULT-VALUE}).")
    int maxStepsInFlight;

    @Option(
            names = "--shutdown-grace",
            defaultValue = "PT10S",
            description =
                    "On SIGTERM: health NOT_SERVING and new requests UNAVAILABLE at once, queued and running requests finish, the port closes, and the process exits 0 within this time (e.g. 2s, 500ms or ISO-8601; default: ${DEFAULT-VALUE}).")
    Duration shutdownGrace;

    @Option(
            names = "--exchange-timeout",
            defaultValue = "PT10S",
            description =
                    "How long a rank waits for its peers in one exchange (e.g. 2s, 500ms or ISO-8601); it must cover the slowest rank's expert compute (default: ${DEFAULT-VALUE}).")
    Duration exchangeTimeout;

    private TlsFiles tls;
    private TokenFile tokens;

    /**
     * On SIGTERM, drains {@code moe} within {@code --shutdown-grace}, then closes {@code alsoClose}
     * (the cluster port) and {@code metrics}, and exits 0: a requested stop is not a failure.
     */
    void drainOnSigterm(
            Supplier<MoeServer> moe, MetricsEndpoint metrics, AutoCloseable... alsoClose) {
        Runtime.getRuntime()
                .addShutdownHook(
                        new Thread(
                                () -> {
                                    boolean signalled = !Main.exitingOnItsOwn();
                                    try {
                                        moe.get().drain(shutdownGrace);
                                        for (AutoCloseable c : alsoClose) {
                                            closeQuietly(c);
                                        }
                                        if (metrics != null) {
                                            metrics.close();
                                        }
                                    } finally {
                                        if (signalled) {
                                            Runtime.getRuntime().halt(0);
                                        }
                                    }
                                },
                                "moe-a2a-shutdown"));
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception e) {
            LoggerFactory.getLogger(ServerOptions.class).warn("while stopping: {}", e.toString());
        }
    }

    /** The coordinator's first placement of {@code experts} over the world size. */
    Placement placement(int experts) {
        return FirstPlacement.decide(experts, worldSize, redundantExperts);
    }

    MoeServer.Settings settings() {
        return new MoeServer.Settings(
                maxBatchTokens,
                maxQueuedRequests,
                maxQueuedTokens,
                maxRequestBytes,
                maxStepsInFlight,
                rebalanceEvery,
                capacityFactor,
                recording(),
                modes());
    }

    /** What --mode and --ll-max-tokens ask for. */
    StepModes modes() {
        return new StepModes(StepModes.Choice.parse("--mode", mode), llMaxTokens);
    }

    /**
     * What --record-routing asks for, or null.
     *
     * @throws IllegalArgumentException when the trace's directory does not exist
     */
    private RoutingRecorder.@Nullable Settings recording() {
        if (recordRouting == null) {
            return null;
        }
        Path dir = recordRouting.toAbsolutePath().getParent();
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException(
                    "--record-routing: " + recordRouting + " (its directory does not exist)");
        }
        return new RoutingRecorder.Settings(recordRouting, recordSteps, recordEvery);
    }

    /**
     * A Netty server builder for the client port: TLS with --tls-cert, client tokens with
     * --auth-token-file, the limits of {@link GrpcLimits}, the window of --flow-control-window.
     */
    NettyServerBuilder clientPort() {
        if (flowControlWindow < GrpcLimits.MIN_FLOW_CONTROL_WINDOW) {
            throw new IllegalArgumentException(
                    "--flow-control-window: "
                            + flowControlWindow
                            + " (expected: at least "
                            + GrpcLimits.MIN_FLOW_CONTROL_WINDOW
                            + " bytes)");
        }
        NettyServerBuilder b =
                GrpcLimits.netty(address(port), credentials(false))
                        .flowControlWindow(flowControlWindow);
        if (authTokenFile != null) {
            b.intercept(new BearerAuth(tokens(), Role.CLIENT, "the client port"));
        }
        return b;
    }

    /**
     * A Netty server builder for the cluster port: mutual TLS with --tls-cert and --tls-ca, worker
     * tokens with --auth-token-file, the limits of {@link GrpcLimits}.
     */
    NettyServerBuilder clusterPort(int clusterPort) {
        NettyServerBuilder b = GrpcLimits.netty(address(clusterPort), credentials(true));
        if (authTokenFile != null) {
            b.intercept(new BearerAuth(tokens(), Role.WORKER, "the cluster port"));
        }
        return b;
    }

    /** What the log says about the ports' security. */
    String securityDescription() {
        return (tlsCert != null
                        ? "tls" + (tlsCa != null ? " (workers: mutual tls)" : "")
                        : "plaintext")
                + (authTokenFile != null ? ", bearer tokens" : ", no tokens");
    }

    private InetSocketAddress address(int p) {
        return new InetSocketAddress(host, p);
    }

    private ServerCredentials credentials(boolean mutual) {
        if (tlsCert == null && tlsKey == null) {
            if (!plaintext && !loopback()) {
                throw new IllegalArgumentException(
                        "--host "
                                + host
                                + ": not a loopback address, and no --tls-cert (expected: --tls-cert"
                                + " and --tls-key, or --plaintext to serve unencrypted)");
            }
            return InsecureServerCredentials.create();
        }
        if (plaintext) {
            throw new IllegalArgumentException(
                    "--plaintext: given with --tls-cert (expected: one or the other)");
        }
        if (mutual && tlsCa == null) {
            throw new IllegalArgumentException(
                    "--tls-ca: missing (expected: the authority of the workers' certificates, for"
                            + " mutual TLS on the cluster port)");
        }
        return tls().server(mutual);
    }

    private synchronized TlsFiles tls() {
        if (tls == null) {
            tls = TlsFiles.load(tlsCert, tlsKey, tlsCa, TlsFiles.RELOAD_EVERY);
        }
        return tls;
    }

    private synchronized TokenFile tokens() {
        if (tokens == null) {
            tokens = TokenFile.open(authTokenFile);
        }
        return tokens;
    }

    private boolean loopback() {
        try {
            return InetAddress.getByName(host).isLoopbackAddress();
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("--host " + host + ": unknown host", e);
        }
    }

    /** A Prometheus registry with the process binders, tagged with the process's role. */
    static PrometheusMeterRegistry registry(String role) {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        registry.config().commonTags("role", role);
        ProcessMetrics.bindTo(registry);
        return registry;
    }

    /** Serves /metrics on {@code port}, or nothing when it is 0. */
    static MetricsEndpoint metrics(PrometheusMeterRegistry registry, String host, int port) {
        if (port == 0) {
            return null;
        }
        try {
            return MetricsEndpoint.start(registry, host, port);
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "--metrics-port " + port + ": cannot listen (pass another port, or 0)", e);
        }
    }
}
