package moe.a2a.worker;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.DataPlane;
import moe.a2a.comm.PeerFaults;
import moe.a2a.comm.PlaneUnavailableException;
import moe.a2a.comm.SparseCommunicator;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import moe.a2a.protocol.PlaneCodec;
import moe.a2a.protocol.RankTaskCodec;
import moe.a2a.protocol.TaskCodec;
import moe.a2a.v1.Bound;
import moe.a2a.v1.FormGroup;
import moe.a2a.v1.GroupReady;
import moe.a2a.v1.PrepareGroup;
import moe.a2a.v1.RankTaskRequest;
import moe.a2a.v1.StepTask;
import moe.a2a.v1.WorkerMessage;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The rank's group, one epoch at a time: prepare binds the epoch's data plane, form connects the
 * group, steps and rank tasks go to it while its epoch is current, and a drop (a new epoch, an
 * abort, a lost session, shutdown) fails and closes it. Owned by the worker's data-plane thread
 * ({@link #abortNow} and {@link #formedGroups} from any).
 */
final class GroupEpochs {
    private static final Logger LOG = LoggerFactory.getLogger(GroupEpochs.class);

    private final OfferedDataPlanes planes;
    private final RankAssignment assignment;
    private final RankTasks tasks = new RankTasks();
    private final RankTaskRunner rankTasks = new RankTaskRunner();

    /**
     * The formed group and its epoch: written on the data-plane thread holding {@link #serving},
     * which {@link #abortNow} holds to read them, so a group is never aborted from another thread
     * once its drop began.
     */
    private @Nullable FormedGroup group;

    private long commEpoch = -1;

    /** The formed epoch {@link #abortNow} aborted last, guarded by {@link #serving}. */
    private long abandonedEpoch = -1;

    private long boundEpoch = -1;

    /** The ranks of the group being formed, when it is not every rank (a lost rank's peers). */
    private int[] groupRanks = new int[0];

    /** How the group being formed binds when it spans hosts, else null. */
    private @Nullable HostGroupsPlane acrossHosts;

    /** Groups this worker connected, ever: read by the session loop's thread. */
    private final AtomicLong formedGroups = new AtomicLong();

    /** Guards the writes of {@link #group} and {@link #commEpoch}, and abortNow's reads. */
    private final Object serving = new Object();

    GroupEpochs(OfferedDataPlanes planes, RankAssignment assignment) {
        this.planes = planes;
        this.assignment = assignment;
    }

    /** Binds this rank for {@code prepare}'s epoch, dropping any group before, and says Bound. */
    void prepare(PrepareGroup prepare, SessionSender sender) {
        drop("new group epoch " + prepare.getEpoch());
        if (!prepare.getTransport().isEmpty()) {
            planes.useForEpoch(Transports.parse("prepare.transport", prepare.getTransport()));
        }
        if (prepare.getNcclAfresh()) {
            planes.current().freeKept();
        }
        int rank = assignment.rank();
        int worldSize = assignment.worldSize();
        groupRanks = prepare.getMembersList().stream().mapToInt(r -> r).toArray();
        acrossHosts = null;
        Bound bound;
        if (prepare.getMemberHostsCount() > 0) {
            if (groupRanks.length > 0) {
                throw new IllegalArgumentException(
                        "prepare.members: "
                                + Arrays.toString(groupRanks)
                                + " (expected: none, every rank, with prepare.member_hosts)");
            }
            acrossHosts =
                    new HostGroupsPlane(
                            offered(TransportReach.NETWORK, "the rails across hosts"),
                            offered(TransportReach.HOST, "the group inside this host"),
                            prepare,
                            rank,
                            worldSize);
            bound = acrossHosts.bind(prepare);
        } else if (groupRanks.length == 0) {
            bound =
                    PlaneCodec.bound(
                            prepare.getEpoch(),
                            planes.current().bind(PlaneCodec.epoch(prepare, rank, worldSize)));
        } else {
            int member = Arrays.binarySearch(groupRanks, rank);
            if (member < 0) {
                throw new IllegalArgumentException(
                        "prepare.members: "
                                + Arrays.toString(groupRanks)
                                + " (expected: to hold this worker's rank "
                                + rank
                                + ")");
            }
            bound =
                    PlaneCodec.bound(
                            prepare.getEpoch(),
                            planes.current()
                                    .bind(PlaneCodec.epoch(prepare, member, groupRanks.length)));
        }
        boundEpoch = prepare.getEpoch();
        sender.send(WorkerMessage.newBuilder().setBound(bound).build());
    }

    /** The data plane of {@code reach} that this worker offered, needed for {@code what}. */
    private DataPlane offered(TransportReach reach, String what) {
        DataPlane offered = planes.of(reach);
        if (offered == null) {
            throw new A2aException(
                    "prepare.member_hosts: a group across hosts runs "
                            + what
                            + " over "
                            + Transports.first(reach)
                                    .map(p -> p.transport().label())
                                    .orElse(reach.name())
                            + " (this worker offered "
                            + planes.transports()
                            + ")");
        }
        return offered;
    }

    /**
     * Connects the group of the epoch last bound and says GroupReady; ignores a FormGroup of any
     * other epoch.
     */
    void form(FormGroup form, SessionSender sender) {
        if (boundEpoch < 0 || form.getEpoch() != boundEpoch) {
            return;
        }
        long epoch = form.getEpoch();
        boundEpoch = -1;
        HostGroupsPlane hosts = acrossHosts;
        acrossHosts = null;
        FormedGroup formed;
        try {
            formed = hosts != null ? hosts.form(form) : formFlat(form);
        } catch (PlaneUnavailableException e) {
            String transport =
                    (hosts != null ? hosts.hostTransport() : planes.current().transport()).label();
            LOG.warn("group epoch {}: cannot run {} here: {}", epoch, transport, e.getMessage());
            sender.send(TaskCodec.planeUnavailable(epoch, transport, e.getMessage()));
            return;
        } catch (A2aException e) {
            int peer = PeerFaults.worldPeerOf(e, assignment.rank(), groupRanks);
            if (peer != PeerFaults.NONE) {
                // a live peer this rank cannot reach: the control plane decides
                LOG.warn(
                        "group epoch {}: cannot connect to rank {}: {}",
                        epoch,
                        peer,
                        e.getMessage());
            } else if (PeerFaults.timedOut(e)) {
                // a member never arrived and the transport cannot tell which (NCCL's init and
                // shrink): the control plane forms again, without it once its session is gone
                LOG.warn("group epoch {}: a member never arrived: {}", epoch, e.getMessage());
            } else {
                throw e;
            }
            // the session goes on
            sender.send(TaskCodec.groupFailed(epoch, peer, e.getMessage()));
            return;
        }
        synchronized (serving) {
            group = formed;
            commEpoch = epoch;
        }
        try {
            formed.bindTo(assignment.loaded().runtime());
        } catch (A2aException e) {
            // the members' first exchange (over NCCL) failed: where a peer went, it timed out or
            // the control plane abandoned the epoch (abortNow), the epoch fails and the session
            // goes on; a fault of this rank's own (its device, say) still ends the session
            int peer = formed.failedPeer(e, assignment.rank());
            boolean abandoned;
            synchronized (serving) {
                abandoned = abandonedEpoch == epoch;
            }
            drop("group epoch " + epoch + " failed while binding");
            if (peer == PeerFaults.NONE && !PeerFaults.timedOut(e) && !abandoned) {
                throw e;
            }
            LOG.warn("group epoch {}: binding the group failed: {}", epoch, e.getMessage());
            sender.send(TaskCodec.groupFailed(epoch, peer, e.getMessage()));
            return;
        }
        formedGroups.incrementAndGet();
        LOG.info(
                "group epoch {} connected: rank {} of {}{}{}",
                epoch,
                assignment.rank(),
                assignment.worldSize(),
                groupRanks.length > 0 ? ", with ranks " + Arrays.toString(groupRanks) : "",
                formed.describe());
        sender.send(
                WorkerMessage.newBuilder()
                        .setReady(GroupReady.newBuilder().setEpoch(epoch))
                        .build());
    }

    /** Connects the flat group of the epoch last bound (of {@link #groupRanks} where not all). */
    private FormedGroup formFlat(FormGroup form) {
        Communicator comm = planes.current().form(PlaneCodec.peers(form));
        if (groupRanks.length > 0) {
            comm = new SparseCommunicator(comm, groupRanks, assignment.worldSize());
        }
        return FormedGroup.flat(comm, groupRanks.clone());
    }

    /** Groups this worker connected so far. Any thread. */
    long formedGroups() {
        return formedGroups.get();
    }

    /** Runs this rank's share of a step of the current epoch, or says it is not in that epoch. */
    void step(StepTask task, SessionSender sender) {
        if (group == null || task.getEpoch() != commEpoch) {
            sender.send(
                    TaskCodec.stepFailure(
                            task.getStepId(),
                            "rank "
                                    + assignment.rank()
                                    + " is not in group epoch "
                                    + task.getEpoch()));
            return;
        }
        tasks.step(task, assignment.loaded(), group, assignment.worldSize(), sender);
    }

    /** Runs this rank's part of a rank task on the group, or says it has none. */
    void rankTask(RankTaskRequest request, SessionSender sender) {
        if (group == null) {
            sender.send(
                    RankTaskCodec.failure(
                            request.getTaskId(), "rank " + assignment.rank() + " has no group"));
            return;
        }
        rankTasks.run(
                request,
                new GroupRankContext(assignment.rank(), assignment.worldSize(), group),
                sender);
    }

    /**
     * Aborts the formed group of {@code epoch} (whichever is formed, when negative) for {@code
     * reason} at once, from any thread: a wait in progress on the data-plane thread ends now, not
     * at its deadline, and every later call fails. The data-plane thread still {@link #drop}s it.
     */
    void abortNow(long epoch, String reason) {
        synchronized (serving) {
            if (group != null && (epoch < 0 || epoch == commEpoch)) {
                abandonedEpoch = commEpoch;
                group.abort(new A2aException(reason));
            }
        }
    }

    /**
     * Forgets an epoch bound but not formed, and fails and closes the formed group, for {@code
     * reason}.
     */
    void drop(String reason) {
        if (boundEpoch >= 0) {
            if (acrossHosts != null) {
                acrossHosts.drop();
                acrossHosts = null;
            } else {
                planes.current().drop();
            }
            boundEpoch = -1;
        }
        FormedGroup dropped = group;
        if (dropped != null) {
            synchronized (serving) {
                group = null;
                commEpoch = -1;
            }
            dropped.abort(new A2aException(reason));
            dropped.close();
        }
    }
}
