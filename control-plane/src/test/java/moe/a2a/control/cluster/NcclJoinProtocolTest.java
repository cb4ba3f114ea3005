package moe.a2a.control.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.control.cluster.ClusterMembershipTest.Session;
import moe.a2a.control.grpc.ClusterGrpcService;
import moe.a2a.experts.ModelConfig;
import moe.a2a.v1.Bound;
import moe.a2a.v1.ClusterServiceGrpc;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.Join;
import moe.a2a.v1.ModelSpec;
import moe.a2a.v1.WorkerMessage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The NCCL side of the join protocol, without a GPU: workers must offer nccl, rank 0's unique id
 * travels in its Bound and reaches every rank unchanged in FormGroup, a malformed id breaks the
 * epoch instead of reaching ncclCommInitRank.
 */
class NcclJoinProtocolTest {
    RemoteCluster cluster;
    Server server;
    ManagedChannel channel;

    @BeforeEach
    void start() throws Exception {
        ModelConfig model = new ModelConfig(4, 8, 8, 2, 1);
        ModelSpec spec = ModelSpec.newBuilder().setExperts(4).setHidden(8).setFfn(8).setTopK(2).setLayers(1).setSeed(1).build();
        cluster = new RemoteCluster(model, spec, ClusterMembershipTest.FINGERPRINT, 2, "nccl", TimeUnit.SECONDS.toNanos(5),
                TimeUnit.SECONDS.toNanos(30), new ClusterListener() {
                    @Override
                    public void onServing(long epoch, long formedInNanos) {}

                    @Override
                    public void onNotServing(String reason) {}
                });
        String name = InProcessServerBuilder.generateName();
        server = InProcessServerBuilder.forName(name).directExecutor().addService(new ClusterGrpcService(cluster)).build().start();
        channel = InProcessChannelBuilder.forName(name).directExecutor().build();
    }

    @AfterEach
    void stop() {
        channel.shutdownNow();
        server.shutdownNow();
        cluster.close();
    }

    @Test
    void shouldRefuseWorkerThatOffersOnlyTcpQuotingItsProbe() throws Exception {
        Session s = join("cpu-box", 0, false, "no GPU data plane: /dev/nvidiactl does not exist");
        Status refused = s.end.get(5, TimeUnit.SECONDS);
        assertThat(refused.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(refused.getDescription())
                .contains("join.transports: [tcp] (expected: nccl, this cluster's data plane)")
                .contains("the worker's GPU probe: no GPU data plane: /dev/nvidiactl does not exist");
        assertThat(cluster.joined()).isZero();
    }

    @Test
    void shouldCarryRankZerosUniqueIdToEveryRank() throws Exception {
        Session a = join("a", 0, true, "");
        Session b = join("b", 1, true, "");
        assertThat(a.next().getAccepted().getTransport()).isEqualTo("nccl");
        assertThat(b.next().getAccepted().getTransport()).isEqualTo("nccl");
        long epoch = a.next().getPrepare().getEpoch();
        assertThat(b.next().getPrepare().getEpoch()).isEqualTo(epoch);

        byte[] id = new byte[128];
        new SplittableRandom(7).nextBytes(id);
        b.requests.onNext(bound(epoch, new byte[0]));
        a.requests.onNext(bound(epoch, id));
        for (Session s : new Session[] {a, b}) {
            ControlMessage form = s.next();
            assertThat(form.hasForm()).isTrue();
            assertThat(form.getForm().getEpoch()).isEqualTo(epoch);
            assertThat(form.getForm().getNcclUniqueId().toByteArray()).isEqualTo(id);
        }
    }

    @Test
    void shouldBreakEpochWhenUniqueIdIsMalformed() throws Exception {
        Session a = join("a", 0, true, "");
        Session b = join("b", 1, true, "");
        a.next();
        b.next();
        long epoch = a.next().getPrepare().getEpoch();
        b.next();
        a.requests.onNext(bound(epoch, new byte[127]));
        b.requests.onNext(bound(epoch, new byte[0]));
        ControlMessage abort = b.next();
        assertThat(abort.hasAbort()).as("no FormGroup with a bad id: %s", abort).isTrue();
        assertThat(abort.getAbort().getReason()).contains("rank 0's bound.nccl_unique_id: 127 bytes (expected: 128)");
        ControlMessage again = b.next();
        assertThat(again.getPrepare().getEpoch()).as("the group forms again").isEqualTo(epoch + 1);
    }

    private static WorkerMessage bound(long epoch, byte[] id) {
        return WorkerMessage.newBuilder().setBound(Bound.newBuilder().setEpoch(epoch)
                .setNcclUniqueId(ByteString.copyFrom(id))).build();
    }

    private Session join(String id, int rank, boolean nccl, String probe) {
        Session s = new Session();
        s.requests = ClusterServiceGrpc.newStub(channel).session(s);
        Join.Builder join = Join.newBuilder().setWorkerId(id).setPreferredRank(rank).setGpuProbe(probe);
        if (nccl) {
            join.addTransports("tcp").addTransports("nccl");
        }
        s.requests.onNext(WorkerMessage.newBuilder().setJoin(join).build());
        return s;
    }
}
