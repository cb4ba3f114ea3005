package moe.a2a.control.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.grpc.Status;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.nccl.NcclTransportProvider;
import moe.a2a.control.cluster.ClusterMembershipTest.Session;
import moe.a2a.v1.Bound;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.FormGroup;
import moe.a2a.v1.Join;
import moe.a2a.v1.NcclParent;
import moe.a2a.v1.WorkerMessage;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The NCCL side of the join protocol, without a GPU: workers must offer nccl, rank 0's unique id
 * travels in its Bound and reaches every rank unchanged in FormGroup, unless every member holds a
 * common parent to shrink (then FormGroup carries the shrink instead), a malformed id breaks the
 * epoch instead of reaching ncclCommInitRank. A rank 0 whose parent may shrink makes no id; when
 * the group then cannot shrink, the next epoch forms afresh.
 */
class NcclJoinProtocolTest {
    InProcessCluster fixture;
    RemoteCluster cluster;

    @BeforeEach
    void start() throws Exception {
        fixture = new InProcessCluster(NcclTransportProvider.NCCL);
        cluster = fixture.cluster;
    }

    @AfterEach
    void stop() {
        fixture.close();
    }

    @Test
    void shouldRefuseWorkerThatOffersOnlyTcpQuotingItsProbe() throws Exception {
        Session s = join("cpu-box", 0, false, "no GPU data plane: /dev/nvidiactl does not exist");
        Status refused = s.end.get(5, TimeUnit.SECONDS);
        assertThat(refused.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(refused.getDescription())
                .contains("join.transports: [tcp] (expected: nccl, this cluster's data plane)")
                .contains(
                        "the worker's GPU probe: no GPU data plane: /dev/nvidiactl does not exist");
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
    void shouldSendTheShrinkOfTheMembersCommonParentInsteadOfTheId() throws Exception {
        for (FormGroup form : formed(new byte[128], parent(0), parent(2))) {
            assertThat(form.getNcclUniqueId().isEmpty()).as("no id with a shrink").isTrue();
            assertThat(form.getNcclShrink().getParentEpoch()).isEqualTo(5);
            assertThat(form.getNcclShrink().getExcludedRanksList()).containsExactly(1);
        }
    }

    @Test
    void shouldSendTheIdWhenOneMemberHoldsNoParent() throws Exception {
        byte[] id = new byte[128];
        new SplittableRandom(9).nextBytes(id);
        for (FormGroup form : formed(id, parent(0), null)) {
            assertThat(form.hasNcclShrink()).isFalse();
            assertThat(form.getNcclUniqueId().toByteArray()).isEqualTo(id);
        }
    }

    /** A rank 0 that may shrink makes no id: the shrink goes out all the same. */
    @Test
    void shouldShrinkWhenRankZeroMadeNoIdBesideItsParent() throws Exception {
        for (FormGroup form : formed(new byte[0], parent(0), parent(2))) {
            assertThat(form.getNcclShrink().getExcludedRanksList()).containsExactly(1);
        }
    }

    /**
     * A rank 0 that made no id beside its parent, in a group that cannot shrink (a member holds
     * none): the epoch breaks, and the next asks every member to free its parent and rank 0 for an
     * id (nccl_afresh), which forms the group.
     */
    @Test
    void shouldFormAfreshWhenRankZeroMadeNoIdAndTheGroupCannotShrink() throws Exception {
        BoundPair pair = boundPair(new byte[0], parent(0), null);
        Session a = pair.a();
        Session b = pair.b();
        long epoch = pair.epoch();
        ControlMessage abort = b.next();
        assertThat(abort.hasAbort()).as("no FormGroup without an id: %s", abort).isTrue();
        assertThat(abort.getAbort().getReason())
                .contains("rank 0 made no unique id")
                .contains("forming afresh");
        assertThat(a.next().hasAbort()).isTrue();
        ControlMessage again = b.next();
        assertThat(again.getPrepare().getEpoch()).isEqualTo(epoch + 1);
        assertThat(again.getPrepare().getNcclAfresh()).isTrue();
        assertThat(a.next().getPrepare().getNcclAfresh()).isTrue();

        byte[] id = new byte[128];
        new SplittableRandom(11).nextBytes(id);
        a.requests.onNext(bound(epoch + 1, id, null));
        b.requests.onNext(bound(epoch + 1, new byte[0], null));
        for (Session s : new Session[] {a, b}) {
            assertThat(s.next().getForm().getNcclUniqueId().toByteArray()).isEqualTo(id);
        }
    }

    @Test
    void shouldBreakEpochWhenRankZeroMadeNoIdAndOffersNoParent() throws Exception {
        Session b = boundPair(new byte[0], null, null).b();
        ControlMessage abort = b.next();
        assertThat(abort.getAbort().getReason())
                .contains("rank 0's bound.nccl_unique_id: 0 bytes (expected: 128)");
        assertThat(b.next().getPrepare().getNcclAfresh())
                .as("a malformed id is not a missed shrink")
                .isFalse();
    }

    /**
     * The FormGroup each of two workers gets once rank 0 bound with {@code id} and each reported
     * its parent (null: none).
     */
    private List<FormGroup> formed(
            byte[] id, @Nullable NcclParent parent0, @Nullable NcclParent parent1)
            throws Exception {
        BoundPair pair = boundPair(id, parent0, parent1);
        return List.of(pair.a().next().getForm(), pair.b().next().getForm());
    }

    /** Workers a (rank 0) and b (rank 1), and the first epoch they bound. */
    private record BoundPair(Session a, Session b, long epoch) {}

    /**
     * Workers a and b bound for the first epoch: a with {@code id}, b with none, each reporting its
     * parent (null: none).
     */
    private BoundPair boundPair(
            byte[] id, @Nullable NcclParent parent0, @Nullable NcclParent parent1)
            throws Exception {
        Session a = join("a", 0, true, "");
        Session b = join("b", 1, true, "");
        long epoch = prepared(a, b);
        a.requests.onNext(bound(epoch, id, parent0));
        b.requests.onNext(bound(epoch, new byte[0], parent1));
        return new BoundPair(a, b, epoch);
    }

    /** Takes {@code a}'s and {@code b}'s Accepted and PrepareGroup; the epoch prepared. */
    private static long prepared(Session a, Session b) throws Exception {
        a.next();
        b.next();
        long epoch = a.next().getPrepare().getEpoch();
        b.next();
        return epoch;
    }

    /** Rank {@code rank} of a 3-rank epoch-5 communicator. */
    private static NcclParent parent(int rank) {
        return NcclParent.newBuilder().setEpoch(5).setGroupId(9).setRank(rank).setSize(3).build();
    }

    @Test
    void shouldBreakEpochWhenUniqueIdIsMalformed() throws Exception {
        BoundPair pair = boundPair(new byte[127], null, null);
        Session b = pair.b();
        long epoch = pair.epoch();
        ControlMessage abort = b.next();
        assertThat(abort.hasAbort()).as("no FormGroup with a bad id: %s", abort).isTrue();
        assertThat(abort.getAbort().getReason())
                .contains("rank 0's bound.nccl_unique_id: 127 bytes (expected: 128)");
        ControlMessage again = b.next();
        assertThat(again.getPrepare().getEpoch()).as("the group forms again").isEqualTo(epoch + 1);
    }

    @Test
    void autoShouldRunNcclWhenTheFirstWorkerOffersItAndRefuseOneWithoutIt() throws Exception {
        fixture.close();
        fixture = new InProcessCluster(TransportPolicy.AUTO);
        cluster = fixture.cluster;
        Session a = join("gpu-a", 0, true, "");
        assertThat(a.next().getAccepted().getTransport()).isEqualTo("nccl");
        Session cpu = join("cpu-box", 1, false, "no GPU data plane: /dev/nvidiactl does not exist");
        Status refused = cpu.end.get(5, TimeUnit.SECONDS);
        assertThat(refused.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(refused.getDescription())
                .contains("join.transports: [tcp] (expected: nccl")
                .contains("its workers are on GPUs")
                .contains("the worker's GPU probe: no GPU data plane");
        Session b = join("gpu-b", 1, true, "");
        assertThat(b.next().getAccepted().getTransport()).isEqualTo("nccl");
        assertThat(a.next().getPrepare().getTransport()).isEqualTo("nccl");
        assertThat(b.next().getPrepare().getTransport()).isEqualTo("nccl");
    }

    @Test
    void autoShouldRunTcpWhenTheFirstWorkerHasNoGpu() throws Exception {
        fixture.close();
        fixture = new InProcessCluster(TransportPolicy.AUTO);
        cluster = fixture.cluster;
        Session cpu = join("cpu-box", 0, false, "");
        assertThat(cpu.next().getAccepted().getTransport()).isEqualTo("tcp");
        Session gpu = join("gpu-b", 1, true, "");
        assertThat(gpu.next().getAccepted().getTransport())
                .as("a GPU worker serves a CPU cluster over tcp")
                .isEqualTo("tcp");
        assertThat(cpu.next().getPrepare().getTransport()).isEqualTo("tcp");
        assertThat(gpu.next().getPrepare().getTransport()).isEqualTo("tcp");
    }

    private static WorkerMessage bound(long epoch, byte[] id) {
        return bound(epoch, id, null);
    }

    private static WorkerMessage bound(long epoch, byte[] id, @Nullable NcclParent parent) {
        Bound.Builder bound =
                Bound.newBuilder().setEpoch(epoch).setNcclUniqueId(ByteString.copyFrom(id));
        if (parent != null) {
            bound.setNcclParent(parent);
        }
        return WorkerMessage.newBuilder().setBound(bound).build();
    }

    private Session join(String id, int rank, boolean nccl, String probe) {
        Session s = fixture.open();
        Join.Builder join =
                Join.newBuilder().setWorkerId(id).setPreferredRank(rank).setGpuProbe(probe);
        if (nccl) {
            join.addTransports("tcp").addTransports("nccl");
        }
        s.requests.onNext(WorkerMessage.newBuilder().setJoin(join).build());
        return s;
    }
}
