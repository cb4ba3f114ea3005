package moe.a2a.cli;

import io.grpc.ManagedChannel;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.Transport;
import moe.a2a.comm.tcp.DataPlaneTls;
import moe.a2a.comm.tcp.TcpTransport;
import moe.a2a.control.security.TlsFiles;
import moe.a2a.gpu.GpuProbe;
import moe.a2a.kernels.RowKernels;
import moe.a2a.metrics.MetricsEndpoint;
import moe.a2a.worker.DataPlane;
import moe.a2a.worker.NcclDataPlane;
import moe.a2a.worker.ShmDataPlane;
import moe.a2a.worker.TcpDataPlane;
import moe.a2a.worker.WorkerAgent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code moe-a2a worker}: one rank as a process, joined to a control plane. */
@Command(
        name = "worker",
        mixinStandardHelpOptions = true,
        description =
                "Run one rank: join the control plane, load this rank's experts, exchange tokens with the other workers.")
final class WorkerCommand implements Callable<Integer> {
    private static final Logger LOG = LoggerFactory.getLogger(WorkerCommand.class);
    private static final String AUTO = "auto";

    @Option(
            names = "--control-plane",
            required = true,
            paramLabel = "HOST:PORT",
            description = "The control plane's gRPC address.")
    String controlPlane;

    @Option(
            names = "--transport",
            defaultValue = AUTO,
            description =
                    "Data planes to offer the control plane: auto, tcp, shm or nccl; auto offers tcp, shm when --shm-dir is a writable directory, and nccl when the GPU probe finds a usable GPU (default: ${DEFAULT-VALUE}).")
    String transportChoice;

    @Option(
            names = "--shm-dir",
            defaultValue = "/dev/shm",
            description =
                    "Directory (a tmpfs) for the shared-memory data plane's files; the workers of an shm group must share it (default: ${DEFAULT-VALUE}).")
    Path shmDir;

    @Option(
            names = "--data-host",
            defaultValue = "127.0.0.1",
            description =
                    "Address the other workers reach this one at (default: ${DEFAULT-VALUE}).")
    String dataHost;

    @Option(
            names = "--data-port",
            defaultValue = "0",
            description =
                    "Port for the other workers; 0 picks a free one (default: ${DEFAULT-VALUE}).")
    int dataPort;

    @Option(
            names = "--rank",
            defaultValue = "-1",
            description = "Rank to ask for; -1 takes any free rank (default: ${DEFAULT-VALUE}).")
    int rank;

    @Option(names = "--worker-id", description = "Name of this worker (default: a random id).")
    String workerId;

    @Option(
            names = "--expect-model",
            defaultValue = "",
            description = "Refuse to serve any other model fingerprint than this one.")
    String expectModel;

    @Option(
            names = "--rejoin-timeout",
            defaultValue = "PT60S",
            description =
                    "Give up after the control plane is unreachable this long (default: ${DEFAULT-VALUE}).")
    Duration rejoinTimeout;

    @Option(
            names = "--metrics-port",
            defaultValue = "9464",
            description = "Prometheus /metrics port; 0 turns it off (default: ${DEFAULT-VALUE}).")
    int metricsPort;

    @Option(
            names = "--device",
            defaultValue = "0",
            description = "CUDA device of this rank, for nccl (default: ${DEFAULT-VALUE}).")
    int device;

    @Mixin GpuOptions gpu;

    @Mixin ChannelOptions connection;

    /**
     * Mutual TLS between workers when the worker has TLS: the certificate it presents to the
     * cluster port, and the cluster's authority.
     */
    private DataPlaneTls dataPlaneTls() {
        TlsFiles files = connection.tlsFiles();
        if (files == null) {
            return null;
        }
        if (!files.hasCertificate() || !files.hasAuthority()) {
            throw new IllegalArgumentException(
                    (files.hasCertificate() ? "--tls-ca" : "--tls-cert")
                            + ": missing (expected: --tls-cert, --tls-key and --tls-ca together: a"
                            + " worker presents its certificate to the cluster port and to its peers)");
        }
        return files.dataPlane();
    }

    @Override
    public Integer call() throws Exception {
        // null: auto
        Transport transport =
                transportChoice.equalsIgnoreCase(AUTO)
                        ? null
                        : Transport.parse("--transport", transportChoice);
        if (transport == Transport.LOCAL) {
            throw new IllegalArgumentException(
                    "--transport: local (expected: auto, tcp, shm or nccl; serve runs the local"
                            + " transport)");
        }
        DataPlaneTls dataTls = dataPlaneTls();
        List<Transport> offered = new ArrayList<>();
        String probeLine = "";
        String shmUnusable = null;
        if (transport == null || transport == Transport.SHM) {
            shmUnusable = ShmDataPlane.unusable(shmDir);
            if (transport == Transport.SHM && shmUnusable != null) {
                System.err.println("--transport shm: --shm-dir: " + shmUnusable);
                return 2;
            }
        }
        if (transport == null || transport == Transport.NCCL) {
            GpuProbe.Result probe = gpu.probe();
            probeLine = probe.describe();
            if (transport == Transport.NCCL && !probe.usable()) {
                System.err.println("--transport nccl: " + probeLine);
                return 2;
            }
            if (probe.usable()) {
                offered.add(Transport.NCCL);
            }
            LOG.info("GPU probe: {}", probeLine);
        }
        if ((transport == null || transport == Transport.SHM) && shmUnusable == null) {
            offered.add(0, Transport.SHM);
        }
        if (transport == null || transport == Transport.TCP) {
            offered.add(0, Transport.TCP);
        }
        if (transport == null) {
            LOG.info(
                    "--transport auto: offering {} to the control plane{}{}",
                    offered,
                    offered.contains(Transport.NCCL)
                            ? ""
                            : " (no GPU data plane here, see the probe above)",
                    shmUnusable == null ? "" : " (no shm: --shm-dir " + shmUnusable + ")");
        }
        String id =
                workerId != null
                        ? workerId
                        : "worker-" + UUID.randomUUID().toString().substring(0, 8);
        PrometheusMeterRegistry registry = ServerOptions.registry("worker");
        MetricsEndpoint metrics = ServerOptions.metrics(registry, "0.0.0.0", metricsPort);
        try (TcpTransport tcp = new TcpTransport(2)) {
            LOG.info(
                    "moe-a2a worker {}: controlPlane={} transports={} (tcp: {}) dataHost={} dataPort={}"
                            + " kernels={}",
                    id,
                    controlPlane,
                    offered,
                    tcp.description(),
                    dataHost,
                    dataPort,
                    RowKernels.implementation());
            List<DataPlane> planes = new ArrayList<>();
            if (offered.contains(Transport.TCP)) {
                planes.add(new TcpDataPlane(tcp, dataHost, dataPort, dataTls));
            }
            if (offered.contains(Transport.SHM)) {
                ShmDataPlane shm = new ShmDataPlane(shmDir);
                LOG.info("shm: directory {}, domain {}", shmDir, shm.domain());
                planes.add(shm);
            }
            if (offered.contains(Transport.NCCL)) {
                planes.add(NcclDataPlane.onDevice(device));
            }
            ManagedChannel channel = connection.open(controlPlane);
            WorkerAgent agent =
                    new WorkerAgent(
                            channel,
                            new WorkerAgent.Settings(
                                    id,
                                    rank,
                                    expectModel,
                                    rejoinTimeout,
                                    Duration.ofMillis(500),
                                    probeLine,
                                    ShmDataPlane.hostName()),
                            planes,
                            registry);
            // a requested stop is not a failure: leave the group, then exit 0
            Runtime.getRuntime()
                    .addShutdownHook(
                            new Thread(
                                    () -> {
                                        boolean signalled = !Main.exitingOnItsOwn();
                                        try {
                                            agent.close();
                                        } finally {
                                            if (signalled) {
                                                Runtime.getRuntime().halt(0);
                                            }
                                        }
                                    },
                                    "moe-a2a-shutdown"));
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
