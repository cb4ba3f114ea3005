package moe.a2a.cli;

import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Asks a server's gRPC health service once: exit 0 when SERVING, for container health checks and
 * scripts.
 */
@Command(
        name = "health",
        mixinStandardHelpOptions = true,
        description =
                "Checks a moe-a2a server's gRPC health: exit 0 when SERVING, 1 when not, 2 when unreachable.")
final class HealthCommand implements Callable<Integer> {
    @Option(
            names = "--target",
            defaultValue = "127.0.0.1:50051",
            paramLabel = "HOST:PORT",
            description = "Server address (default: ${DEFAULT-VALUE}).")
    String target;

    @Option(
            names = "--service",
            defaultValue = "",
            description = "Service name to check; empty for the whole server.")
    String service;

    @Option(
            names = "--timeout",
            defaultValue = "PT3S",
            description =
                    "Deadline of the check (e.g. 2s, 500ms or ISO-8601; default: ${DEFAULT-VALUE}).")
    Duration timeout;

    @Mixin ChannelOptions connection;

    @Override
    public Integer call() throws InterruptedException {
        ManagedChannel channel = connection.open(target);
        try {
            HealthCheckResponse response =
                    HealthGrpc.newBlockingStub(channel)
                            .withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                            .check(HealthCheckRequest.newBuilder().setService(service).build());
            System.out.println(target + ": " + response.getStatus());
            return response.getStatus() == HealthCheckResponse.ServingStatus.SERVING ? 0 : 1;
        } catch (StatusRuntimeException e) {
            System.out.println(
                    target + ": " + e.getStatus().getCode() + " " + e.getStatus().getDescription());
            return 2;
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }
}
