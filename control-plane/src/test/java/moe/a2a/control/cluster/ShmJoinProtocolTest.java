package moe.a2a.control.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.shm.ShmTransportProvider;
import moe.a2a.comm.tcp.TcpTransportProvider;
import moe.a2a.control.cluster.ClusterMembershipTest.Session;
import moe.a2a.v1.Bound;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.GroupReady;
import moe.a2a.v1.Join;
import moe.a2a.v1.PrepareGroup;
import moe.a2a.v1.WorkerMessage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * How the control plane picks the data plane from what workers report: under auto, shm for workers
 * of one shared-memory domain (one host) that offer it, tcp when their domains differ or one does
 * not offer shm; under --transport shm, a worker from another domain is refused naming both hosts.
 */
@Timeout(30)
class ShmJoinProtocolTest {
    static final String HOST_A = "boot=1111,pidns=pid:[1],dir=42:7";
    static final String HOST_B = "boot=2222,pidns=pid:[1],dir=42:7";

    @Test
    void autoShouldPickShmWhenEveryWorkerIsOnOneHost() throws Exception {
        try (InProcessCluster fixture = new InProcessCluster(TransportPolicy.AUTO)) {
            Session a = join(fixture, "a", 0, "box-1", HOST_A, true);
            Session b = join(fixture, "b", 1, "box-1", HOST_A, true);
            assertThat(a.next().getAccepted().getTransport()).isEqualTo("shm");
            assertThat(b.next().getAccepted().getTransport()).isEqualTo("shm");
            ControlMessage prepare = a.next();
            assertThat(prepare.getPrepare().getTransport()).isEqualTo("shm");
            assertThat(b.next().getPrepare().getTransport()).isEqualTo("shm");
            long epoch = prepare.getPrepare().getEpoch();
            // over shm a Bound carries no address: the group id names the files
            a.requests.onNext(bound(epoch));
            b.requests.onNext(bound(epoch));
            for (Session s : new Session[] {a, b}) {
                ControlMessage form = s.next();
                assertThat(form.hasForm()).as("%s", form).isTrue();
                assertThat(form.getForm().getEpoch()).isEqualTo(epoch);
            }
            a.requests.onNext(ready(epoch));
            b.requests.onNext(ready(epoch));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (fixture.cluster.healthy() < 2 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertThat(fixture.cluster.healthy()).isEqualTo(2);
            assertThat(fixture.cluster.transport()).isEqualTo(ShmTransportProvider.SHM);
        }
    }

    @Test
    void autoShouldPickTcpWhenHostsDiffer() throws Exception {
        try (InProcessCluster fixture = new InProcessCluster(TransportPolicy.AUTO)) {
            Session a = join(fixture, "a", 0, "box-1", HOST_A, true);
            Session b = join(fixture, "b", 1, "box-2", HOST_B, true);
            a.next();
            assertThat(b.next().getAccepted().getTransport())
                    .as("the second worker is told what the group will run")
                    .isEqualTo("tcp");
            assertThat(a.next().getPrepare().getTransport()).isEqualTo("tcp");
            assertThat(b.next().getPrepare().getTransport()).isEqualTo("tcp");
            assertThat(fixture.cluster.transport()).isEqualTo(TcpTransportProvider.TCP);
        }
    }

    @Test
    void autoShouldFormAGroupAcrossHostsWhenHostsHoldEqualRanks() throws Exception {
        try (InProcessCluster fixture = new InProcessCluster(TransportPolicy.AUTO, 4, "")) {
            // ranks dealt to hosts as workers join: host 0 holds ranks 0 and 2, host 1 ranks 1, 3
            Session[] s = {
                join(fixture, "a", 0, "box-1", HOST_A, true),
                join(fixture, "b", 1, "box-2", HOST_B, true),
                join(fixture, "c", 2, "box-1", HOST_A, true),
                join(fixture, "d", 3, "box-2", HOST_B, true)
            };
            for (Session w : s) {
                assertThat(w.next().hasAccepted()).isTrue();
            }
            long epoch = 0;
            for (Session w : s) {
                PrepareGroup prepare = w.next().getPrepare();
                assertThat(prepare.getTransport()).isEqualTo("tcp");
                assertThat(prepare.getMemberHostsList()).containsExactly(0, 1, 0, 1);
                assertThat(prepare.getMembersList()).isEmpty();
                epoch = prepare.getEpoch();
            }
            for (int r = 0; r < s.length; r++) {
                s[r].requests.onNext(
                        WorkerMessage.newBuilder()
                                .setBound(
                                        Bound.newBuilder()
                                                .setEpoch(epoch)
                                                .setDataAddress("10.0.0." + r + ":7000"))
                                .build());
            }
            for (Session w : s) {
                assertThat(w.next().getForm().getPeersList())
                        .as("every rank's rail address, in rank order")
                        .containsExactly(
                                "10.0.0.0:7000", "10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000");
            }
            for (Session w : s) {
                w.requests.onNext(ready(epoch));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (fixture.cluster.healthy() < 4 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertThat(fixture.cluster.healthy()).isEqualTo(4);
            assertThat(fixture.cluster.transport()).isEqualTo(TcpTransportProvider.TCP);
            assertThat(fixture.cluster.hosts()).isEqualTo(2);
        }
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "three ranks on one host and one on the other, AAAB, true, ''",
        "one rank a host, ABCD, true, ''",
        "a worker without shm, ABAB, false, ''",
        "FP8 dispatch, ABAB, true, fp8"
    })
    void autoShouldFormOneFlatTcpGroupWhenHostsCannotSplitTheRanksEvenly(
            String why, String hosts, boolean lastOffersShm, String dispatchDType)
            throws Exception {
        try (InProcessCluster fixture =
                new InProcessCluster(TransportPolicy.AUTO, 4, dispatchDType)) {
            Session[] s = new Session[4];
            for (int r = 0; r < 4; r++) {
                String domain = "boot=" + hosts.charAt(r) + ",pidns=pid:[1],dir=42:7";
                s[r] =
                        join(
                                fixture,
                                "w" + r,
                                r,
                                "box-" + hosts.charAt(r),
                                domain,
                                r < 3 || lastOffersShm);
            }
            for (Session w : s) {
                w.next();
            }
            for (Session w : s) {
                PrepareGroup prepare = w.next().getPrepare();
                assertThat(prepare.getTransport()).isEqualTo("tcp");
                assertThat(prepare.getMemberHostsList()).as(why).isEmpty();
            }
            assertThat(fixture.cluster.hosts()).isZero();
        }
    }

    @Test
    void autoShouldPickTcpWhenAWorkerDoesNotOfferShm() throws Exception {
        try (InProcessCluster fixture = new InProcessCluster(TransportPolicy.AUTO)) {
            Session a = join(fixture, "a", 0, "box-1", HOST_A, true);
            Session b = join(fixture, "b", 1, "box-1", HOST_A, false);
            a.next();
            b.next();
            assertThat(a.next().getPrepare().getTransport()).isEqualTo("tcp");
        }
    }

    @Test
    void autoShouldRefuseWorkerThatOffersShmAlone() throws Exception {
        try (InProcessCluster fixture = new InProcessCluster(TransportPolicy.AUTO)) {
            Session s = fixture.open();
            s.requests.onNext(
                    WorkerMessage.newBuilder()
                            .setJoin(
                                    Join.newBuilder()
                                            .setWorkerId("shm-only")
                                            .addTransports("shm")
                                            .setShmDomain(HOST_A))
                            .build());
            Status refused = s.end.get(5, TimeUnit.SECONDS);
            assertThat(refused.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
            assertThat(refused.getDescription()).contains("join.transports: [shm] (expected: tcp");
        }
    }

    @Test
    void shmShouldRefuseWorkerOnAnotherHostNamingBoth() throws Exception {
        try (InProcessCluster fixture = new InProcessCluster(ShmTransportProvider.SHM)) {
            Session a = join(fixture, "a", 0, "box-1", HOST_A, true);
            assertThat(a.next().getAccepted().getTransport()).isEqualTo("shm");
            Session b = join(fixture, "b", 1, "box-2", HOST_B, true);
            Status refused = b.end.get(5, TimeUnit.SECONDS);
            assertThat(refused.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
            assertThat(refused.getDescription())
                    .contains("join.shm_domain: " + HOST_B + " of worker b on box-2")
                    .contains("expected: " + HOST_A + ", that of rank 0 on box-1")
                    .contains("--transport shm needs every worker on one host");
            assertThat(fixture.cluster.joined()).isEqualTo(1);

            Session c = join(fixture, "c", 1, "box-1", HOST_A, true);
            assertThat(c.next().getAccepted().getRank()).isEqualTo(1);
            assertThat(a.next().getPrepare().getTransport()).isEqualTo("shm");
        }
    }

    @Test
    void shmShouldRefuseWorkerThatDoesNotOfferIt() throws Exception {
        try (InProcessCluster fixture = new InProcessCluster(ShmTransportProvider.SHM)) {
            Session a = join(fixture, "a", 0, "box-1", "", false);
            Status refused = a.end.get(5, TimeUnit.SECONDS);
            assertThat(refused.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
            assertThat(refused.getDescription())
                    .contains("join.transports: [tcp] (expected: shm, this cluster's data plane)");
        }
    }

    private static WorkerMessage bound(long epoch) {
        return WorkerMessage.newBuilder().setBound(Bound.newBuilder().setEpoch(epoch)).build();
    }

    private static WorkerMessage ready(long epoch) {
        return WorkerMessage.newBuilder().setReady(GroupReady.newBuilder().setEpoch(epoch)).build();
    }

    private static Session join(
            InProcessCluster fixture,
            String id,
            int rank,
            String host,
            String domain,
            boolean shm) {
        Session s = fixture.open();
        Join.Builder join =
                Join.newBuilder()
                        .setWorkerId(id)
                        .setPreferredRank(rank)
                        .setHost(host)
                        .addTransports("tcp");
        if (shm) {
            join.addTransports("shm").setShmDomain(domain).setShmDirectory("/dev/shm");
        }
        s.requests.onNext(WorkerMessage.newBuilder().setJoin(join).build());
        return s;
    }
}
