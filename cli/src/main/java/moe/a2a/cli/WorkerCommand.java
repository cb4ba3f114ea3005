package moe.a2a.cli;

import io.grpc.ManagedChannel;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.Hosts;
import moe.a2a.comm.PlaneSettings;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportProvider;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import moe.a2a.control.security.TlsFiles;
import moe.a2a.gpu.GpuRankOptions;
import moe.a2a.kernels.RowKernels;
import moe.a2a.metrics.MetricsEndpoint;
import moe.a2a.worker.WorkerAgent;
import org.jspecify.annotations.Nullable;
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
    static final String AUTO = "auto";

    /** Event-loop threads of a worker's network data plane. */
    private static final int WORKER_IO_THREADS = 2;

    /** Where host-memory data planes map their files unless --shm-dir says otherwise. */
    static final String DEFAULT_SHM_DIR = "/dev/shm";

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
            defaultValue = DEFAULT_SHM_DIR,
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

    @Option(
            names = "--tf32",
            description =
                    "On nccl, let the fp32 GEMMs of fp16 and fp32 steps run on TF32 tensor cores"
                            + " (10-bit mantissa products; default: fp32 math).")
    boolean tf32;

    @Option(
            names = "--fp8-experts",
            description =
                    "On nccl, hold an FP8 checkpoint's experts as stored (half the device memory of"
                            + " bf16; each projection is made bf16-rounded weights in scratch before"
                            + " its GEMM, every step). Without it they are held in FP8 only when"
                            + " bf16 does not fit.")
    boolean fp8Experts;

    @Mixin GpuOptions gpu;

    @Mixin ChannelOptions connection;

    /**
     * Mutual TLS between workers when the worker has TLS: the certificate it presents to the
     * cluster port, and the cluster's authority.
     */
    private PlaneSettings.@Nullable TlsKeys dataPlaneTls() {
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
        List<TransportProvider> offerable = OfferedTransports.offerable();
        TransportProvider chosen = null; // null: auto
        if (!transportChoice.equalsIgnoreCase(AUTO)) {
            Transport transport = Transports.parse("--transport", transportChoice);
            if (Transports.reach(transport) == TransportReach.THREADS) {
                throw new IllegalArgumentException(
                        "--transport: "
                                + transport
                                + " (expected: "
                                + OfferedTransports.choices(offerable)
                                + "; serve runs the "
                                + transport
                                + " transport)");
            }
            chosen = Transports.provider(transport);
        }
        PlaneSettings settings =
                new PlaneSettings(
                        dataHost,
                        dataPort,
                        WORKER_IO_THREADS,
                        dataPlaneTls(),
                        shmDir,
                        device,
                        gpu.cudaLibDir,
                        gpu.ncclLibDir);
        OfferedTransports offer = OfferedTransports.probe(chosen, offerable, settings);
        if (offer.refusal() != null) {
            System.err.println(offer.refusal());
            return 2;
        }
        String id =
                workerId != null
                        ? workerId
                        : "worker-" + UUID.randomUUID().toString().substring(0, 8);
        PrometheusMeterRegistry registry = ServerOptions.registry("worker");
        MetricsEndpoint metrics = ServerOptions.metrics(registry, "0.0.0.0", metricsPort);
        try (OfferedTransports.Planes planes = offer.open(settings)) {
            LOG.info(
                    "moe-a2a worker {}: controlPlane={} transports={}{} dataHost={} dataPort={}"
                            + " kernels={}",
                    id,
                    controlPlane,
                    offer.transports(),
                    planes.descriptions(),
                    dataHost,
                    dataPort,
                    RowKernels.implementation());
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
                                    offer.deviceProbe(),
                                    Hosts.localName(),
                                    new GpuRankOptions(tf32, fp8Experts)),
                            planes.all(),
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
