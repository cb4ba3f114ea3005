package moe.a2a.control.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.tcp.TcpTransportProvider;
import moe.a2a.protocol.PlacementCodec;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.Heartbeat;
import moe.a2a.v1.Join;
import moe.a2a.v1.WorkerMessage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Joins the control plane refuses, each with its own status. */
@Timeout(30)
class ClusterMembershipTest {
    static final String FINGERPRINT = InProcessCluster.FINGERPRINT;

    InProcessCluster fixture;
    RemoteCluster cluster;

    @BeforeEach
    void start() throws Exception {
        fixture = new InProcessCluster(TcpTransportProvider.TCP);
        cluster = fixture.cluster;
    }

    @AfterEach
    void stop() {
        fixture.close();
    }

    @Test
    void shouldGiveFreeRanksThenRefuseWhenFull() throws Exception {
        Session a = join("a", -1, "");
        Session b = join("b", 1, FINGERPRINT);
        ControlMessage accepted = a.next();
        assertThat(accepted.getAccepted().getRank()).isZero();
        assertThat(accepted.getAccepted().getTransport()).isEqualTo("tcp");
        assertThat(accepted.getAccepted().getPlacementsCount())
                .as("one placement per layer")
                .isEqualTo(cluster.model().layers());
        for (int layer = 0; layer < cluster.model().layers(); layer++) {
            assertThat(
                            PlacementCodec.decode(
                                            accepted.getAccepted().getPlacements(layer),
                                            cluster.model().experts(),
                                            cluster.worldSize())
                                    .toString())
                    .as("the coordinator's placement of layer %d travels in Accepted", layer)
                    .isEqualTo(cluster.placements().get(layer).toString());
        }
        assertThat(b.next().getAccepted().getRank()).isEqualTo(1);
        assertThat(a.next().hasPrepare()).as("group forms once every rank is taken").isTrue();
        assertThat(cluster.joined()).isEqualTo(2);

        Status full = join("c", -1, "").end.get(5, TimeUnit.SECONDS);
        assertThat(full.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertThat(full.getDescription()).contains("cluster full: worldSize=2");
    }

    @Test
    void shouldRefuseSecondSessionOfSameWorker() throws Exception {
        join("a", -1, "").next();
        Status duplicate = join("a", -1, "").end.get(5, TimeUnit.SECONDS);
        assertThat(duplicate.getCode()).isEqualTo(Status.Code.ALREADY_EXISTS);
        assertThat(duplicate.getDescription()).contains("join.worker_id: a already holds rank 0");
    }

    @Test
    void shouldRefuseWorkerExpectingAnotherModel() throws Exception {
        Status other = join("a", -1, "experts=8,hidden=8").end.get(5, TimeUnit.SECONDS);
        assertThat(other.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(other.getDescription())
                .contains("join.expected_model: experts=8,hidden=8")
                .contains(FINGERPRINT);
        assertThat(cluster.joined()).isZero();
    }

    @Test
    void shouldRefuseSessionThatDoesNotStartWithJoin() throws Exception {
        Session s = open();
        s.requests.onNext(
                WorkerMessage.newBuilder().setHeartbeat(Heartbeat.getDefaultInstance()).build());
        Status status = s.end.get(5, TimeUnit.SECONDS);
        assertThat(status.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(status.getDescription()).contains("expected: join");
    }

    @Test
    void shouldFreeRankWhenSessionEnds() throws Exception {
        Session a = join("a", -1, "");
        a.next();
        a.requests.onCompleted();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (cluster.joined() != 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(cluster.joined()).isZero();
        assertThat(join("a", 0, "").next().getAccepted().getRank()).isZero();
    }

    private Session join(String id, int rank, String expectedModel) {
        Session s = open();
        s.requests.onNext(
                WorkerMessage.newBuilder()
                        .setJoin(
                                Join.newBuilder()
                                        .setWorkerId(id)
                                        .setPreferredRank(rank)
                                        .setExpectedModel(expectedModel))
                        .build());
        return s;
    }

    private Session open() {
        return fixture.open();
    }

    static final class Session implements StreamObserver<ControlMessage> {
        final LinkedBlockingQueue<ControlMessage> received = new LinkedBlockingQueue<>();
        final CompletableFuture<Status> end = new CompletableFuture<>();
        StreamObserver<WorkerMessage> requests;

        ControlMessage next() throws InterruptedException {
            ControlMessage m = received.poll(5, TimeUnit.SECONDS);
            assertThat(m).as("a control message (session ended: %s)", end.getNow(null)).isNotNull();
            return m;
        }

        @Override
        public void onNext(ControlMessage value) {
            received.add(value);
        }

        @Override
        public void onError(Throwable t) {
            end.complete(Status.fromThrowable(t));
        }

        @Override
        public void onCompleted() {
            end.complete(Status.OK);
        }
    }
}
