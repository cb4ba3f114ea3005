package moe.a2a.cli;

import io.grpc.netty.NettyServerBuilder;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.time.Duration;
import java.util.Iterator;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicReference;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import moe.a2a.control.cluster.ClusterListener;
import moe.a2a.control.cluster.RemoteCluster;
import moe.a2a.control.cluster.StragglerWatch;
import moe.a2a.control.cluster.TransportPolicy;
import moe.a2a.control.grpc.ClusterServer;
import moe.a2a.control.grpc.MoeServer;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.WeightSource;
import moe.a2a.kernels.RowKernels;
import moe.a2a.metrics.ExchangeWaitMetrics;
import moe.a2a.metrics.MetricsEndpoint;
import moe.a2a.v1.ModelSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code moe-a2a control-plane}: MoeService for clients, ClusterService for N worker processes. */
@Command(
        name = "control-plane",
        mixinStandardHelpOptions = true,
        description =
                "Serve MoE layers on N worker processes (moe-a2a worker), exchanging tokens over TCP, shared memory or NCCL.")
final class ControlPlaneCommand implements Callable<Integer> {
    private static final Logger LOG = LoggerFactory.getLogger(ControlPlaneCommand.class);

    @Mixin ModelOptions model;

    @Mixin ServerOptions server;

    @Option(
            names = "--transport",
            defaultValue = "tcp",
            completionCandidates = ClusterTransports.class,
            description =
                    "The workers' data plane: ${COMPLETION-CANDIDATES}. auto: shm when every worker reports the same host (shared-memory domain) and offers shm, else tcp, decided each time the group forms; shm: every worker on one host; workers that cannot run it are refused (default: ${DEFAULT-VALUE}).")
    String transportChoice;

    /** The data planes of worker processes, and auto. */
    static final class ClusterTransports implements Iterable<String> {
        @Override
        public Iterator<String> iterator() {
            return TransportPolicy.labels().iterator();
        }
    }

    @Option(
            names = "--heartbeat-timeout",
            defaultValue = "PT3S",
            description =
                    "A worker silent this long counts as lost (e.g. 2s, 500ms or ISO-8601; default: ${DEFAULT-VALUE}).")
    Duration heartbeatTimeout;

    @Option(
            names = "--straggler-factor",
            defaultValue = "3",
            description =
                    "Flag a rank as a straggler when the others wait on it this many times as long"
                            + " as on the median rank (default: ${DEFAULT-VALUE}).")
    double stragglerFactor;

    @Option(
            names = "--straggler-window",
            defaultValue = "32",
            description = "Steps each straggler judgement sums over (default: ${DEFAULT-VALUE}).")
    int stragglerWindow;

    @Option(
            names = "--evict-stragglers",
            description =
                    "Serve around a rank flagged as a straggler, as around a lost one, where the"
                            + " others hold a replica of each of its experts; it is tried again after"
                            + " --straggler-eviction, doubled for each eviction after, up to 10 min"
                            + " (default: off).")
    boolean evictStragglers;

    @Option(
            names = "--straggler-eviction",
            defaultValue = "PT30S",
            description =
                    "How long a straggler's first eviction lasts, from 1s to 10m (e.g. 30s; default:"
                            + " ${DEFAULT-VALUE}).")
    Duration stragglerEviction;

    @Option(
            names = "--cluster-port",
            defaultValue = "50061",
            description =
                    "Port of the cluster service that workers join (their --control-plane), apart from the client port; 0 picks a free one (default: ${DEFAULT-VALUE}).")
    int clusterPort;

    @Override
    public Integer call() throws Exception {
        if (Transports.all().stream()
                .anyMatch(
                        p ->
                                p.reach() == TransportReach.THREADS
                                        && p.transport()
                                                .label()
                                                .equalsIgnoreCase(transportChoice))) {
            throw new IllegalArgumentException(
                    "--transport: "
                            + transportChoice
                            + " (expected: "
                            + String.join(", ", TransportPolicy.labels())
                            + "; serve runs the "
                            + transportChoice.toLowerCase(Locale.ROOT)
                            + " transport)");
        }
        TransportPolicy policy = TransportPolicy.parse("--transport", transportChoice);
        Transport transport = policy.fixed();
        NettyServerBuilder clientPort = server.clientPort();
        NettyServerBuilder workerPort = server.clusterPort(clusterPort);
        WeightSource weights = model.open();
        ModelConfig config = model.config(weights);
        boolean onDevices =
                transport != null && Transports.reach(transport) == TransportReach.DEVICES;
        if (onDevices && config.microBatches() != 1) {
            throw new IllegalArgumentException(
                    "--micro-batches: "
                            + config.microBatches()
                            + " (expected: 1 with --transport "
                            + transport
                            + "; micro-batches run on tcp)");
        }
        StragglerWatch.Settings stragglers =
                new StragglerWatch.Settings(
                        stragglerFactor,
                        stragglerWindow,
                        evictStragglers,
                        stragglerEviction.toNanos());
        ModelSpec spec = model.spec(config);
        String fingerprint = ModelOptions.fingerprint(spec);
        LOG.info(
                "moe-a2a control-plane: model={} fingerprint={} worldSize={} transport={} exchangeTimeout={}"
                        + " heartbeatTimeout={} stragglers={} settings={} grpc={}:{} metricsPort={}"
                        + " kernels={}",
                config,
                fingerprint,
                server.worldSize,
                policy,
                server.exchangeTimeout,
                heartbeatTimeout,
                stragglers,
                server.settings(),
                server.host,
                server.port,
                server.metricsPort,
                RowKernels.implementation());
        PrometheusMeterRegistry registry = ServerOptions.registry("control-plane");
        MetricsEndpoint metrics = ServerOptions.metrics(registry, server.host, server.metricsPort);
        AtomicReference<MoeServer> moe = new AtomicReference<>();
        ClusterListener health =
                new ClusterListener() {
                    @Override
                    public void onServing(long epoch, long formedInNanos) {
                        MoeServer s = moe.get();
                        if (s != null) {
                            s.setServing(true);
                        }
                    }

                    @Override
                    public void onNotServing(String reason) {
                        MoeServer s = moe.get();
                        if (s != null) {
                            s.setServing(false);
                        }
                    }
                };
        RemoteCluster cluster =
                new RemoteCluster(
                        config,
                        spec,
                        fingerprint,
                        server.placement(config.experts()),
                        policy,
                        server.exchangeTimeout.toNanos(),
                        heartbeatTimeout.toNanos(),
                        health,
                        new StragglerWatch(
                                stragglers,
                                server.worldSize,
                                new ExchangeWaitMetrics(registry, server.worldSize)));
        ClusterServer workers;
        try {
            workers = ClusterServer.start(workerPort, cluster);
        } catch (IOException | RuntimeException e) {
            cluster.close();
            throw e;
        }
        try {
            moe.set(
                    MoeServer.start(
                            clientPort,
                            cluster,
                            weights,
                            server.settings(),
                            registry,
                            false,
                            ServerOptions.CLIENT_SERVICES));
        } catch (IOException | RuntimeException e) {
            workers.close();
            throw e;
        }
        server.drainOnSigterm(moe::get, metrics, workers);
        LOG.info(
                "serving on port {}, cluster port {} ({}; waiting for {} workers){}",
                moe.get().port(),
                workers.port(),
                server.securityDescription(),
                server.worldSize,
                metrics != null
                        ? ", metrics on http://" + server.host + ":" + metrics.port() + "/metrics"
                        : "");
        moe.get().awaitTermination();
        return 0;
    }
}
