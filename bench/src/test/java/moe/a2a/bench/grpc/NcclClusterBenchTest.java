package moe.a2a.bench.grpc;

import static moe.a2a.control.grpc.NcclClusterTest.WORLD;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.nccl.NcclDataPlane;
import moe.a2a.comm.nccl.NcclTransportProvider;
import moe.a2a.comm.nccl.SimulatedNccl;
import moe.a2a.control.cluster.RemoteCluster;
import moe.a2a.control.grpc.AgentThreads;
import moe.a2a.control.grpc.ClusterServer;
import moe.a2a.control.grpc.MoeGrpcServiceTest;
import moe.a2a.control.grpc.MoeGrpcServiceTest.Routing;
import moe.a2a.control.grpc.MoeServer;
import moe.a2a.control.grpc.NcclClusterTest;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import moe.a2a.v1.BenchRequest;
import moe.a2a.v1.BenchServiceGrpc;
import moe.a2a.v1.CollectiveBenchRequest;
import moe.a2a.v1.CollectiveBenchResult;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.MoeServiceGrpc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * BenchService's collectives on worker agents' (simulated) NCCL communicators ({@link
 * NcclClusterTest}'s cluster), between steps: no wrong element, and serving goes on after.
 */
@Timeout(120)
class NcclClusterBenchTest {
    final SeededWeights weights =
            new SeededWeights(11, NcclClusterTest.E, NcclClusterTest.H, NcclClusterTest.I, 1);

    @Test
    void shouldRunCollectivesOnTheWorkersNcclCommunicatorsBetweenSteps() throws Exception {
        RemoteCluster cluster = NcclClusterTest.remoteCluster(NcclTransportProvider.NCCL);
        String name = InProcessServerBuilder.generateName();
        String clientName = InProcessServerBuilder.generateName();
        SimulatedNccl nccl = new SimulatedNccl();
        AgentThreads agents = null;
        ClusterServer clusterPort =
                ClusterServer.start(InProcessServerBuilder.forName(name), cluster);
        try (MoeServer server =
                MoeServer.start(
                        InProcessServerBuilder.forName(clientName),
                        cluster,
                        weights,
                        new MoeServer.Settings(8192, 64, 1 << 20, 1 << 20, 2, 0, 0),
                        new SimpleMeterRegistry(),
                        true,
                        List.of(BenchGrpcService::new))) {
            assertThat(server.group().transport()).isEqualTo(NcclTransportProvider.NCCL);
            ManagedChannel channel = InProcessChannelBuilder.forName(name).build();
            agents = new AgentThreads(channel, WORLD, r -> List.of(new NcclDataPlane(nccl)));
            agents.awaitFormed(cluster, "ranks formed over the simulated NCCL");
            ManagedChannel client = InProcessChannelBuilder.forName(clientName).build();
            MoeServiceGrpc.MoeServiceBlockingStub stub = MoeServiceGrpc.newBlockingStub(client);
            ReferenceMoeLayer reference = new ReferenceMoeLayer(weights);
            ForwardRequest before =
                    MoeGrpcServiceTest.request(
                            new SplittableRandom(500), 0, 5, DType.BF16, Routing.TOPK);
            NcclClusterTest.assertMatchesReference(
                    "before bench", reference, before, stub.forward(before));

            // BenchService's collectives on the workers' NCCL communicators, between steps
            List<CollectiveBenchResult> collectives = new ArrayList<>();
            BenchServiceGrpc.newBlockingStub(client)
                    .run(
                            BenchRequest.newBuilder()
                                    .setIters(2)
                                    .setCollective(
                                            CollectiveBenchRequest.newBuilder()
                                                    .addAllCollectives(
                                                            List.of(
                                                                    "allreduce",
                                                                    "allgather",
                                                                    "reducescatter",
                                                                    "broadcast",
                                                                    "alltoall"))
                                                    .addSizes(64)
                                                    .addSizes(4096)
                                                    .setRoot(1)
                                                    .setWarmup(1))
                                    .build())
                    .forEachRemaining(
                            e -> {
                                if (e.hasCollectiveResult()) {
                                    collectives.add(e.getCollectiveResult());
                                }
                            });
            assertThat(collectives).hasSize(10);
            for (CollectiveBenchResult r : collectives) {
                assertThat(r.getTransport()).isEqualTo("nccl");
                assertThat(r.getRanksTimesCount()).isEqualTo(WORLD);
                assertThat(r.getRanksTimesList())
                        .as(r.getCollective() + " " + r.getSizeBytes())
                        .allMatch(t -> t.getWrong() == 0 && t.getNsCount() == 2);
                assertThat(r.getLinkGbps()).as("no link measured for nccl ranks").isZero();
                assertThat(r.getJson()).contains("\"algo\":\"nccl\"");
            }
            // and serving goes on
            ForwardRequest after =
                    MoeGrpcServiceTest.request(
                            new SplittableRandom(900), 0, 7, DType.FP32, Routing.TOPK);
            NcclClusterTest.assertMatchesReference(
                    "after bench", reference, after, stub.forward(after));

            client.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        } finally {
            if (agents != null) {
                agents.close();
            }
            clusterPort.close();
        }
    }
}
