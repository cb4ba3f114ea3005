package moe.a2a.control.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.Transport;
import moe.a2a.comm.nccl.NcclDataPlane;
import moe.a2a.comm.nccl.NcclTransportProvider;
import moe.a2a.comm.nccl.NcclUniqueId;
import moe.a2a.comm.nccl.SimulatedNccl;
import moe.a2a.control.cluster.QuietListener;
import moe.a2a.control.cluster.RemoteCluster;
import moe.a2a.control.grpc.MoeGrpcServiceTest.Routing;
import moe.a2a.dispatch.Placement;
import moe.a2a.experts.LayerCheck;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import moe.a2a.protocol.TensorCodec;
import moe.a2a.v1.DescribeModelRequest;
import moe.a2a.v1.ForwardRequest;
import moe.a2a.v1.ForwardResponse;
import moe.a2a.v1.ModelSpec;
import moe.a2a.v1.MoeServiceGrpc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The NCCL control path end to end without a GPU: a control plane asking for nccl, worker agents
 * offering it through {@link NcclDataPlane} with a simulated NCCL ({@link FakeNcclGroup}) and the
 * CPU runtime. Rank 0's unique id must travel through the join protocol to every worker (the
 * simulated groups are keyed by it), the communicators must be NCCL's, and answers must match the
 * reference. The bench module runs its collectives on the same cluster (NcclClusterBenchTest).
 */
@Timeout(120)
public class NcclClusterTest {
    public static final int E = 8;
    public static final int H = 32;
    public static final int I = 48;
    public static final int K = 2;
    public static final int WORLD = 2;

    final SeededWeights weights = new SeededWeights(11, E, H, I, 1);

    final SimulatedNccl nccl = new SimulatedNccl();

    @Test
    void shouldServeReferenceAnswersWhenWorkersExchangeOverNccl() throws Exception {
        RemoteCluster cluster = remoteCluster(NcclTransportProvider.NCCL);
        String name = InProcessServerBuilder.generateName();
        String clientName = InProcessServerBuilder.generateName();
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
                        true)) {
            assertThat(server.group().transport()).isEqualTo(NcclTransportProvider.NCCL);
            ManagedChannel channel = InProcessChannelBuilder.forName(name).build();
            agents = new AgentThreads(channel, WORLD, r -> List.of(new NcclDataPlane(nccl)));
            agents.awaitFormed(cluster, "ranks formed over the simulated NCCL");
            List<NcclUniqueId> madeIds = nccl.madeIds();
            assertThat(madeIds).as("rank 0 made one id").hasSize(1);
            assertThat(nccl.groupIds())
                    .as("every rank joined the group of rank 0's id")
                    .containsExactly(madeIds.get(0));
            assertThat(nccl.joinedTransports())
                    .hasSize(WORLD)
                    .containsOnly(NcclTransportProvider.NCCL);

            ManagedChannel client = InProcessChannelBuilder.forName(clientName).build();
            MoeServiceGrpc.MoeServiceBlockingStub stub = MoeServiceGrpc.newBlockingStub(client);
            assertThat(stub.describeModel(DescribeModelRequest.getDefaultInstance()).getTransport())
                    .isEqualTo("nccl");
            ReferenceMoeLayer reference = new ReferenceMoeLayer(weights);
            for (DType dtype : new DType[] {DType.BF16, DType.FP32}) {
                for (int round = 0; round < 3; round++) {
                    SplittableRandom random =
                            new SplittableRandom(500 + round * 7L + dtype.ordinal());
                    ForwardRequest request =
                            MoeGrpcServiceTest.request(
                                    random, 0, 5 + 6 * round, dtype, Routing.TOPK);
                    ForwardResponse response = stub.forward(request);
                    assertMatchesReference(dtype + " round " + round, reference, request, response);
                }
            }

            client.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        } finally {
            if (agents != null) {
                agents.close();
            }
            clusterPort.close();
        }
    }

    /** The seeded one-layer model these cluster tests serve: E experts, H, I, top-K. */
    static ModelSpec spec(long seed) {
        return ModelSpec.newBuilder()
                .setExperts(E)
                .setHidden(H)
                .setFfn(I)
                .setTopK(K)
                .setLayers(1)
                .setSeed(seed)
                .build();
    }

    /**
     * A control plane's cluster of {@link #WORLD} workers on {@code transport}, seeded model 11.
     */
    public static RemoteCluster remoteCluster(Transport transport) {
        ModelSpec spec = spec(11);
        return new RemoteCluster(
                new ModelConfig(E, H, I, K, 1),
                spec,
                "test",
                Placement.contiguous(E, WORLD),
                transport,
                TimeUnit.SECONDS.toNanos(10),
                TimeUnit.SECONDS.toNanos(30),
                new QuietListener());
    }

    public static void assertMatchesReference(
            String where,
            ReferenceMoeLayer reference,
            ForwardRequest request,
            ForwardResponse response) {
        DType dtype = TensorCodec.dtype(request.getHiddenStates().getDtype(), "hidden_states");
        float[] x = TensorCodec.floats(request.getHiddenStates());
        int tokens = x.length / H;
        int[] ids = new int[tokens * K];
        float[] w = new float[tokens * K];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = request.getTopk().getExpertIds(i);
            w[i] = request.getTopk().getWeights(i);
        }
        float[] expected = reference.forward(0, x, tokens, K, ids, w);
        for (int i = 0; i < expected.length; i++) {
            expected[i] = dtype.round(expected[i]);
        }
        LayerCheck.assertClose(
                where, dtype, TensorCodec.floats(response.getHiddenStates()), expected, H);
    }
}
