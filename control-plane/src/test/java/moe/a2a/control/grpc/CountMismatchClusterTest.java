package moe.a2a.control.grpc;

import static moe.a2a.control.grpc.NcclClusterTest.E;
import static moe.a2a.control.grpc.NcclClusterTest.H;
import static moe.a2a.control.grpc.NcclClusterTest.I;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.DataPlane;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ForwardingCommunicator;
import moe.a2a.comm.GroupEpoch;
import moe.a2a.comm.GroupPeers;
import moe.a2a.comm.PlaneBinding;
import moe.a2a.comm.Transport;
import moe.a2a.comm.tcp.TcpDataPlane;
import moe.a2a.comm.tcp.TcpTransportProvider;
import moe.a2a.control.cluster.RemoteCluster;
import moe.a2a.control.grpc.MoeGrpcServiceTest.Routing;
import moe.a2a.experts.ReferenceMoeLayer;
import moe.a2a.experts.SeededWeights;
import moe.a2a.kernels.DType;
import moe.a2a.v1.ForwardRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A worker that announces one number of rows in dispatch and sends another, through the whole
 * cluster over TCP: the step's requests fail UNAVAILABLE naming the peer and both counts, the
 * control plane rebuilds the group, and the next answers are right again.
 */
@Timeout(120)
class CountMismatchClusterTest {
    final SeededWeights weights = new SeededWeights(11, E, H, I, 1);

    @Test
    void shouldRebuildTheGroupAfterAPeerSendsOtherCountsThanItAnnounced() throws Exception {
        RemoteCluster cluster = NcclClusterTest.remoteCluster(TcpTransportProvider.TCP);
        AtomicBoolean lie = new AtomicBoolean();
        try (ServedCluster served =
                ServedCluster.start(
                        cluster,
                        weights,
                        2,
                        (tcp, r) -> {
                            DataPlane tcpPlane = new TcpDataPlane(tcp, "127.0.0.1", 0, null);
                            return List.of(r == 1 ? new Lying(tcpPlane, lie) : tcpPlane);
                        })) {
            served.agents.awaitFormed(cluster, "two TCP workers");
            ReferenceMoeLayer reference = new ReferenceMoeLayer(weights);
            SplittableRandom random = new SplittableRandom(5);
            ForwardRequest before =
                    MoeGrpcServiceTest.request(random, 0, 12, DType.FP32, Routing.TOPK);
            NcclClusterTest.assertMatchesReference(
                    "before", reference, before, served.stub.forward(before));
            int rebuilds = cluster.rebuilds();

            lie.set(true);
            ForwardRequest lied =
                    MoeGrpcServiceTest.request(random, 0, 12, DType.FP32, Routing.TOPK);
            assertThatThrownBy(() -> served.stub.forward(lied))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> {
                                assertThat(e.getStatus().getCode())
                                        .isEqualTo(Status.Code.UNAVAILABLE);
                                assertThat(e.getStatus().getDescription())
                                        .contains("peer=1")
                                        .contains("counts disagree");
                            });

            served.agents.awaitFormed(cluster, "the group formed again");
            assertThat(cluster.rebuilds()).as("group rebuilds").isGreaterThan(rebuilds);
            for (int i = 0; i < 3; i++) {
                ForwardRequest after =
                        MoeGrpcServiceTest.request(random, 0, 5 + i, DType.FP32, Routing.TOPK);
                NcclClusterTest.assertMatchesReference(
                        "after " + i, reference, after, served.stub.forward(after));
            }
        }
    }

    /** A TCP data plane whose communicators announce one row too many to a peer, once asked. */
    private record Lying(DataPlane inner, AtomicBoolean lie) implements DataPlane {
        @Override
        public Transport transport() {
            return inner.transport();
        }

        @Override
        public PlaneBinding bind(GroupEpoch epoch) {
            return inner.bind(epoch);
        }

        @Override
        public Communicator form(GroupPeers peers) {
            return new LyingCommunicator(inner.form(peers), lie);
        }

        @Override
        public void drop() {
            inner.drop();
        }

        @Override
        public void close() {
            inner.close();
        }
    }

    /** Announces one more row to the other rank in one dispatch than it then sends. */
    private static final class LyingCommunicator extends ForwardingCommunicator {
        private final AtomicBoolean lie;

        LyingCommunicator(Communicator inner, AtomicBoolean lie) {
            super(inner);
            this.lie = lie;
        }

        @Override
        public void allToAllCounts(
                long step, ExchangePhase phase, long[] sendCounts, long[] recvCounts) {
            long[] announced = sendCounts;
            if (phase == ExchangePhase.DISPATCH && lie.getAndSet(false)) {
                announced = sendCounts.clone();
                announced[1 - rank()]++;
            }
            inner.allToAllCounts(step, phase, announced, recvCounts);
        }
    }
}
