package moe.a2a.control.cluster;

import com.google.protobuf.ByteString;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import moe.a2a.v1.AbortGroup;
import moe.a2a.v1.Bound;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.FormGroup;
import moe.a2a.v1.NcclParent;
import moe.a2a.v1.NcclShrink;
import moe.a2a.v1.PrepareGroup;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The control plane's side of forming the rank group, one epoch at a time: PrepareGroup goes to
 * every member (every rank, or those left after a loss or a cut link) naming the epoch's transport,
 * each answers Bound with its data address (over NCCL, rank 0's also carries the group's unique id,
 * and each member's the parent communicator it could shrink; over shm it carries nothing: the group
 * id names the files), FormGroup goes out once every member is bound (over NCCL with the unique id,
 * or the shrink {@link NcclShrinkDecision} allows), and each answers GroupReady once connected. A
 * new epoch starts over; answers that name another epoch are stale and ignored. Not thread-safe:
 * guarded by {@link RemoteCluster}'s lock.
 */
final class GroupFormation {
    private static final Logger LOG = LoggerFactory.getLogger(GroupFormation.class);

    /** {@code NCCL_UNIQUE_ID_BYTES}. */
    static final int NCCL_UNIQUE_ID_BYTES = 128;

    private final Membership members;
    private final long exchangeTimeoutNs;
    private final SecureRandom random = new SecureRandom();
    private final @Nullable String[] bound;
    private final @Nullable NcclParent[] parents;
    private final boolean[] ready;

    /** The ranks in this epoch's group, ascending. */
    private int[] groupRanks = new int[0];

    /** 0 until the first PrepareGroup; an answer naming 0 is ignored like a stale one. */
    private long epoch;

    private @Nullable ByteString ncclUniqueId;

    /**
     * Whether the next epoch forms afresh over NCCL: this one could neither shrink nor get a unique
     * id (its first member offered a parent and made none).
     */
    private boolean afresh;

    private int boundCount;
    private int readyCount;
    private long formStartNanos;

    /** The data plane of this epoch's group. */
    private GroupPlan plan = GroupPlan.flat(TransportPolicy.network(), "before the first epoch");

    GroupFormation(Membership members, int worldSize, long exchangeTimeoutNs) {
        this.members = members;
        this.exchangeTimeoutNs = exchangeTimeoutNs;
        this.bound = new String[worldSize];
        this.parents = new NcclParent[worldSize];
        this.ready = new boolean[worldSize];
    }

    long epoch() {
        return epoch;
    }

    /** The transport of the current epoch's group (its rails' when it spans hosts). */
    Transport transport() {
        return plan.transport();
    }

    /** The data plane of the current epoch's group. */
    GroupPlan plan() {
        return plan;
    }

    /**
     * Starts the next epoch of a group of {@code ranks} (ascending; every rank, or the ranks left
     * after a loss), with none bound or ready yet, on {@code plan}'s data plane, and sends them
     * PrepareGroup.
     */
    void prepare(int[] ranks, GroupPlan plan) {
        epoch++;
        this.plan = plan;
        groupRanks = ranks.clone();
        Arrays.fill(bound, null);
        Arrays.fill(parents, null);
        ncclUniqueId = null;
        boundCount = 0;
        Arrays.fill(ready, false);
        readyCount = 0;
        formStartNanos = System.nanoTime();
        boolean freeKept = afresh;
        afresh = false;
        PrepareGroup prepare =
                PrepareGroup.newBuilder()
                        .setEpoch(epoch)
                        .setGroupId(random.nextLong())
                        .setExchangeTimeoutMs(TimeUnit.NANOSECONDS.toMillis(exchangeTimeoutNs))
                        .setTransport(plan.transport().label())
                        .addAllMemberHosts(Arrays.stream(plan.memberHosts()).boxed().toList())
                        .setNcclAfresh(freeKept)
                        .addAllMembers(
                                groupRanks.length == bound.length
                                        ? List.of()
                                        : Arrays.stream(groupRanks).boxed().toList())
                        .build();
        // a rank set aside for a cut link keeps its session but takes no part
        members.sendTo(groupRanks, ControlMessage.newBuilder().setPrepare(prepare).build());
    }

    /**
     * Records {@code rank}'s data address, and sends every rank FormGroup once all are bound.
     *
     * @return why the epoch must break (the first member's NCCL unique id is malformed), or null
     */
    @Nullable String onBound(int rank, Bound b) {
        if (epoch == 0 || b.getEpoch() != epoch || bound[rank] != null) {
            return null;
        }
        // the group's first member makes its NCCL unique id (rank 0, or the first rank left), but
        // none where its parent may shrink into the group
        if (Transports.reach(plan.transport()) == TransportReach.DEVICES && rank == groupRanks[0]) {
            int size = b.getNcclUniqueId().size();
            if (size != NCCL_UNIQUE_ID_BYTES && (size != 0 || !b.hasNcclParent())) {
                return "rank "
                        + rank
                        + "'s bound.nccl_unique_id: "
                        + size
                        + " bytes (expected: "
                        + NCCL_UNIQUE_ID_BYTES
                        + (b.hasNcclParent() ? ", or none with bound.nccl_parent" : "")
                        + ")";
            }
            ncclUniqueId = b.getNcclUniqueId();
        }
        bound[rank] = b.getDataAddress();
        parents[rank] = b.hasNcclParent() ? b.getNcclParent() : null;
        if (++boundCount == groupRanks.length) {
            FormGroup.Builder form = FormGroup.newBuilder().setEpoch(epoch);
            for (int member : groupRanks) {
                form.addPeers(bound[member]);
            }
            if (ncclUniqueId != null && !setNcclGroup(form, ncclUniqueId)) {
                afresh = true;
                return "group epoch "
                        + epoch
                        + ": its members hold no NCCL communicator to shrink into it, and rank "
                        + groupRanks[0]
                        + " made no unique id (its own could shrink): forming afresh";
            }
            members.sendTo(groupRanks, ControlMessage.newBuilder().setForm(form).build());
        }
        return null;
    }

    /**
     * Over NCCL: the shrink of the members' common parent where it can be, else the unique id;
     * false when neither can be (no shrink, and the first member made no id).
     */
    private boolean setNcclGroup(FormGroup.Builder form, ByteString uniqueId) {
        List<@Nullable NcclParent> memberParents =
                Arrays.stream(groupRanks).mapToObj(r -> parents[r]).toList();
        NcclShrink shrink = NcclShrinkDecision.decide(memberParents);
        if (shrink == null) {
            form.setNcclUniqueId(uniqueId);
            return !uniqueId.isEmpty();
        }
        LOG.info(
                "group epoch {}: ranks {} shrink epoch {}'s NCCL communicator without its ranks {}",
                epoch,
                Arrays.toString(groupRanks),
                shrink.getParentEpoch(),
                shrink.getExcludedRanksList());
        form.setNcclShrink(shrink);
        return true;
    }

    /**
     * Records {@code rank}'s GroupReady for epoch {@code e}.
     *
     * @return true when this one made every rank ready, so the group can serve
     */
    boolean onReady(int rank, long e) {
        if (epoch == 0 || e != epoch || ready[rank]) {
            return false;
        }
        ready[rank] = true;
        return ++readyCount == groupRanks.length;
    }

    /** {@code rank}'s data address in this epoch, or null when it has not bound one. */
    @Nullable String address(int rank) {
        return bound[rank];
    }

    /** The ranks in the current epoch's group. */
    int[] members() {
        return groupRanks.clone();
    }

    /** Tells every rank to drop this epoch's group. */
    void abort(String reason) {
        members.broadcast(
                ControlMessage.newBuilder()
                        .setAbort(AbortGroup.newBuilder().setEpoch(epoch).setReason(reason))
                        .build());
    }

    int readyCount() {
        return readyCount;
    }

    /** Whether any rank answered in this epoch, so that breaking it counts as a rebuild. */
    boolean started() {
        return readyCount > 0 || boundCount > 0;
    }

    /** Time since this epoch's PrepareGroup. */
    long formingNanos() {
        return System.nanoTime() - formStartNanos;
    }
}
