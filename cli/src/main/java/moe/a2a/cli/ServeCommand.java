package moe.a2a.cli;

import io.grpc.netty.NettyServerBuilder;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.concurrent.Callable;
import moe.a2a.control.cluster.EmbeddedCluster;
import moe.a2a.control.grpc.MoeServer;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.WeightSource;
import moe.a2a.kernels.RowKernels;
import moe.a2a.metrics.MetricsEndpoint;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** {@code moe-a2a serve}: the embedded default, N in-process ranks behind gRPC. */
@Command(
        name = "serve",
        mixinStandardHelpOptions = true,
        description = "Serve MoE layers with N in-process ranks on the in-process transport.")
final class ServeCommand implements Callable<Integer> {
    private static final Logger LOG = LoggerFactory.getLogger(ServeCommand.class);

    @Mixin ModelOptions model;

    @Mixin ServerOptions server;

    @Override
    public Integer call() throws Exception {
        long started = System.nanoTime();
        NettyServerBuilder clientPort = server.clientPort();
        WeightSource weights = model.open();
        ModelConfig config = model.config(weights);
        LOG.info(
                "moe-a2a serve: model={} weights={} worldSize={} exchangeTimeout={} settings={} transport=local"
                        + " grpc={}:{} metricsPort={} kernels={}",
                config,
                weights.description(),
                server.worldSize,
                server.exchangeTimeout,
                server.settings(),
                server.host,
                server.port,
                server.metricsPort,
                RowKernels.implementation());
        PrometheusMeterRegistry registry = ServerOptions.registry("embedded");
        MetricsEndpoint metrics = ServerOptions.metrics(registry, server.host, server.metricsPort);
        EmbeddedCluster cluster =
                new EmbeddedCluster(
                        config,
                        weights,
                        server.placement(config.experts()),
                        server.exchangeTimeout.toNanos());
        MoeServer moe =
                MoeServer.start(
                        clientPort,
                        cluster,
                        weights,
                        server.settings(),
                        registry,
                        true,
                        ServerOptions.CLIENT_SERVICES);
        server.drainOnSigterm(() -> moe, metrics);
        LOG.info(
                "serving on port {} ({}; {} ranks ready in {} ms){}",
                moe.port(),
                server.securityDescription(),
                server.worldSize,
                (System.nanoTime() - started) / 1_000_000,
                metrics != null
                        ? ", metrics on http://" + server.host + ":" + metrics.port() + "/metrics"
                        : "");
        moe.awaitTermination();
        return 0;
    }
}
