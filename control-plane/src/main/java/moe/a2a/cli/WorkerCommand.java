package moe.a2a.cli;

import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.tcp.TcpTransport;
import moe.a2a.control.cluster.WorkerAgent;
import moe.a2a.control.metrics.MetricsEndpoint;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code moe-a2a worker}: one rank as a process, joined to a control plane. */
@Command(name = "worker", mixinStandardHelpOptions = true,
        description = "Run one rank: join the control plane, load this rank's experts, exchange tokens with the other workers.")
final class WorkerCommand implements Callable<Integer> {
    private static final Logger LOG = LoggerFactory.getLogger(WorkerCommand.class);

    enum Transport { AUTO, TCP, NCCL }

    @Option(names = "--control-plane", required = true, paramLabel = "HOST:PORT", description = "The control plane's gRPC address.")
    String controlPlane;

    @Option(names = "--transport", defaultValue = "AUTO", description = "Data plane: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
    Transport transport;

    @Option(names = "--data-host", defaultValue = "127.0.0.1", description = "Address the other workers reach this one at (default: ${DEFAULT-VALUE}).")
    String dataHost;

    @Option(names = "--data-port", defaultValue = "0", description = "Port for the other workers; 0 picks a free one (default: ${DEFAULT-VALUE}).")
    int dataPort;

    @Option(names = "--rank", defaultValue = "-1", description = "Rank to ask for; -1 takes any free rank (default: ${DEFAULT-VALUE}).")
    int rank;

    @Option(names = "--worker-id", description = "Name of this worker (default: a random id).")
    String workerId;

    @Option(names = "--expect-model", defaultValue = "", description = "Refuse to serve any other model fingerprint than this one.")
    String expectModel;

    @Option(names = "--rejoin-timeout", defaultValue = "PT60S", description = "Give up after the control plane is unreachable this long (default: ${DEFAULT-VALUE}).")
    Duration rejoinTimeout;

    @Option(names = "--metrics-port", defaultValue = "9464", description = "Prometheus /metrics port; 0 turns it off (default: ${DEFAULT-VALUE}).")
    int metricsPort;

    @Override
    public Integer call() throws Exception {
        if (transport == Transport.NCCL) {
            System.err.println("--transport nccl: not available in this build (no GPU data plane); use tcp");
            return 2;
        }
        String id = workerId != null ? workerId : "worker-" + UUID.randomUUID().toString().substring(0, 8);
        PrometheusMeterRegistry registry = ServerOptions.registry("worker");
        MetricsEndpoint metrics = ServerOptions.metrics(registry, "0.0.0.0", metricsPort);
        try (TcpTransport tcp = new TcpTransport(2)) {
            LOG.info("moe-a2a worker {}: controlPlane={} transport={} (tcp: {}) dataHost={} dataPort={}", id,
                    controlPlane, transport, tcp.description(), dataHost, dataPort);
            if (transport == Transport.AUTO) {
                LOG.info("--transport auto: chose tcp (this build has no GPU data plane)");
            }
            ManagedChannel channel = NettyChannelBuilder.forTarget(controlPlane).usePlaintext()
                    .maxInboundMessageSize(Integer.MAX_VALUE).build();
            WorkerAgent agent = new WorkerAgent(channel, new WorkerAgent.Settings(id, rank, expectModel, dataHost,
                    dataPort, rejoinTimeout, Duration.ofMillis(500)), tcp, registry);
            Runtime.getRuntime().addShutdownHook(new Thread(agent::close, "moe-a2a-shutdown"));
            try {
                agent.run();
            } finally {
                channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
                if (metrics != null) {
                    metrics.close();
                }
            }
        }
        return 0;
    }
}
