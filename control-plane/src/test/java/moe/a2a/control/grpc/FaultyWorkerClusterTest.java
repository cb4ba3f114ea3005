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
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
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
 * A worker whose step goes wrong, through the whole cluster over TCP: rank 1 announces one number
 * of rows in dispatch and sends another, or runs out of memory in the middle of its exchange. The
 * step's requests fail UNAVAILABLE saying why, the worker lives on, the control plane rebuilds the
 * group, and the next answers are right again.
 */
@Timeout(120)
class FaultyWorkerClusterTest {
    final SeededWeights weights = new SeededWeights(11, E, H, I, 1);

    @Test
    void shouldRebuildTheGroupAfterAPeerSendsOtherCountsThanItAnnounced() throws Exception {
        failOnceThenRecover(
                Lying::new,
                status ->
                        assertThat(status.getDescription())
                                .contains("peer=1")
                                .contains("counts disagree"));
    }

    @Test
    void shouldFailTheStepNotTheWorkerWhenARankRunsOutOfMemory() throws Exception {
        failOnceThenRecover(
                OutOfMemory::new,
                status ->
                        assertThat(status.getDescription())
                                .contains(
                                        "on rank 1: out of memory for a step of this size (Java"
                                                + " heap space)"));
    }

    /**
     * Serves a step right, has rank 1's communicator (wrapped by {@code faulty}) fail the next one,
     * checks its status, then serves right again.
     */
    private void failOnceThenRecover(
            BiFunction<Communicator, AtomicBoolean, Communicator> faulty, Consumer<Status> check)
            throws Exception {
        RemoteCluster cluster = NcclClusterTest.remoteCluster(TcpTransportProvider.TCP);
        AtomicBoolean fault = new AtomicBoolean();
        try (ServedCluster served =
                ServedCluster.start(
                        cluster,
                        weights,
                        2,
                        (tcp, r) -> {
                            DataPlane tcpPlane = new TcpDataPlane(tcp, "127.0.0.1", 0, null);
                            return List.of(
                                    r == 1
                                            ? new Wrapped(tcpPlane, c -> faulty.apply(c, fault))
                                            : tcpPlane);
                        })) {
            served.agents.awaitFormed(cluster, "two TCP workers");
            ReferenceMoeLayer reference = new ReferenceMoeLayer(weights);
            SplittableRandom random = new SplittableRandom(5);
            ForwardRequest before =
                    MoeGrpcServiceTest.request(random, 0, 12, DType.FP32, Routing.TOPK);
            NcclClusterTest.assertMatchesReference(
                    "before", reference, before, served.stub.forward(before));
            int rebuilds = cluster.rebuilds();

            fault.set(true);
            ForwardRequest failed =
                    MoeGrpcServiceTest.request(random, 0, 12, DType.FP32, Routing.TOPK);
            assertThatThrownBy(() -> served.stub.forward(failed))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> {
                                assertThat(e.getStatus().getCode())
                                        .isEqualTo(Status.Code.UNAVAILABLE);
                                check.accept(e.getStatus());
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

    /** A data plane whose communicators {@code wrap} wraps. */
    private record Wrapped(DataPlane inner, UnaryOperator<Communicator> wrap) implements DataPlane {
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
            return wrap.apply(inner.form(peers));
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
    private static final class Lying extends ForwardingCommunicator {
        private final AtomicBoolean lie;

        Lying(Communicator inner, AtomicBoolean lie) {
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

    /**
     * Runs out of heap once, as a dispatch starts: as a step too big for the worker's -Xmx would,
     * while its peer waits in the exchange.
     */
    private static final class OutOfMemory extends ForwardingCommunicator {
        private final AtomicBoolean fail;

        OutOfMemory(Communicator inner, AtomicBoolean fail) {
            super(inner);
            this.fail = fail;
        }

        @Override
        public void allToAllCounts(
                long step, ExchangePhase phase, long[] sendCounts, long[] recvCounts) {
            if (phase == ExchangePhase.DISPATCH && fail.getAndSet(false)) {
                throw new OutOfMemoryError("Java heap space");
            }
            inner.allToAllCounts(step, phase, sendCounts, recvCounts);
        }
    }
}
