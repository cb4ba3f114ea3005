package moe.a2a.cli;

import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import java.time.Duration;
import java.time.Instant;
import java.util.Iterator;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import moe.a2a.v1.ClusterState;
import moe.a2a.v1.DescribeClusterRequest;
import moe.a2a.v1.MoeServiceGrpc;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Asks a server's gRPC health service once: exit 0 when SERVING, for container health checks and
 * scripts. With {@code --ranks}, asks DescribeCluster instead and prints every rank's condition and
 * why; with {@code --watch}, prints each change WatchCluster sends until the server ends the call.
 */
@Command(
        name = "health",
        mixinStandardHelpOptions = true,
        description =
                "Checks a moe-a2a server's gRPC health: exit 0 when SERVING, 1 when not, 2 when unreachable."
                        + " --ranks prints each rank's condition and why; --watch prints each change.")
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

    @Option(
            names = "--ranks",
            description =
                    "Print every rank's condition (serving, forming, lost, partitioned, evicted),"
                            + " whether it is a straggler, its worker and why (DescribeCluster;"
                            + " needs a client token where the server asks for one).")
    boolean ranks;

    @Option(
            names = "--watch",
            description =
                    "As --ranks, then again at each change until the server ends the call"
                            + " (WatchCluster); --timeout does not apply.")
    boolean watch;

    @Mixin ChannelOptions connection;

    @Override
    public Integer call() throws InterruptedException {
        ManagedChannel channel = connection.open(target);
        try {
            if (watch) {
                return watchRanks(channel);
            }
            if (ranks) {
                ClusterState state =
                        MoeServiceGrpc.newBlockingStub(channel)
                                .withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                                .describeCluster(DescribeClusterRequest.getDefaultInstance());
                System.out.print(ClusterTable.format(target, state));
                return state.getServing() ? 0 : 1;
            }
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

    /** Prints each state the watch sends, stamped; 0 when the server ended the call OK. */
    private int watchRanks(ManagedChannel channel) {
        try {
            Iterator<ClusterState> states =
                    MoeServiceGrpc.newBlockingStub(channel)
                            .watchCluster(DescribeClusterRequest.getDefaultInstance());
            while (states.hasNext()) {
                ClusterState state = states.next();
                System.out.print(Instant.now() + " " + ClusterTable.format(target, state));
                System.out.flush();
            }
            return 0;
        } catch (StatusRuntimeException e) {
            System.out.println(
                    target + ": " + e.getStatus().getCode() + " " + e.getStatus().getDescription());
            return 2;
        }
    }
}
