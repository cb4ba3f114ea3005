package moe.a2a.control.cluster;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.IntStream;
import moe.a2a.comm.A2aException;
import moe.a2a.v1.Bound;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.GroupFailed;
import moe.a2a.v1.LinksProbed;
import moe.a2a.v1.ProbeLinks;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Drives the rank group from epoch to epoch: forms it once every rank is taken, starts serving when
 * every member is ready, and on a loss or failure breaks it (failing the work in flight) and forms
 * it again, whole or, when {@link DegradedServing} allows, without the lost ranks. A failure whose
 * reports show a cut link between two live workers ({@link LinkFaults}) sets one of its ends aside:
 * the group forms without it, degraded where replicas allow, and the set-aside worker is probed (a
 * plain connection to its cut peer while the others serve; else a formation of the whole group,
 * after a delay that doubles while the link fails again), so a group that cannot form is never
 * formed in a loop. With eviction on, a rank flagged as a straggler is served around for a while in
 * the same way. Not thread-safe: guarded by {@link RemoteCluster}'s lock, which the timer tasks it
 * schedules take too; listeners are told on the timer thread, outside the lock.
 */
final class GroupConductor {
    /** Logs under the cluster's name, the one category operators follow. */
    private static final Logger LOG = LoggerFactory.getLogger(RemoteCluster.class);

    /** How long a straggler's first eviction lasts; each one after doubles it, up to the max. */
    static final long FIRST_EVICTION_NANOS = TimeUnit.SECONDS.toNanos(30);

    static final long MAX_EVICTION_NANOS = TimeUnit.MINUTES.toNanos(10);

    /** How long a set-aside worker's probe may try to connect to its cut peer. */
    static final long PROBE_CONNECT_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final Object lock;
    private final ServingState state;
    private final Membership membership;
    private final GroupFormation formation;
    private final DegradedServing degraded;
    private final int worldSize;
    private final ScheduledExecutorService timer;
    private final ClusterListener listener;

    /** Fails every step, rank task and staging in flight; called with the lock held. */
    private final Consumer<A2aException> failInFlight;

    private final LinkFaults links;

    /** Whether a rank flagged as a straggler is served around where replicas allow. */
    private final boolean evictStragglers;

    /** Ranks evicted as stragglers, and how long each one's next eviction lasts. */
    private final boolean[] evicted;

    private final long[] evictFor;

    /** Ranks' failures to connect an epoch's group, gathered before it is broken. */
    private final FailureReports formFailures = new FailureReports("group epoch");

    private int rebuilds;
    private boolean probeScheduled;

    /** The last probe sent to set-aside workers; a later one makes earlier answers stale. */
    private long probeId;

    /** Whether the epoch forming tries links that were cut. */
    private boolean probing;

    GroupConductor(
            Object lock,
            ServingState state,
            Membership membership,
            GroupFormation formation,
            DegradedServing degraded,
            int worldSize,
            ScheduledExecutorService timer,
            ClusterListener listener,
            boolean evictStragglers,
            Consumer<A2aException> failInFlight) {
        this.lock = lock;
        this.state = state;
        this.membership = membership;
        this.formation = formation;
        this.degraded = degraded;
        this.worldSize = worldSize;
        this.timer = timer;
        this.listener = listener;
        this.failInFlight = failInFlight;
        this.links = new LinkFaults(worldSize);
        this.evictStragglers = evictStragglers;
        this.evicted = new boolean[worldSize];
        this.evictFor = new long[worldSize];
        Arrays.fill(evictFor, FIRST_EVICTION_NANOS);
    }

    /** Times the group was broken and had to form again. */
    int rebuilds() {
        return rebuilds;
    }

    /** Ranks set aside for cut links. */
    int partitioned() {
        return links.count();
    }

    /** Forms the group once {@code session} took the last free rank. */
    void onJoined(WorkerSession session) {
        LOG.info("{} joined ({}/{} ranks)", session, membership.joined(), worldSize);
        if (membership.full()) {
            if (degraded.degraded() || usable().length < worldSize) {
                // serving without some ranks: form again, so the returning rank serves
                breakGroup("rank " + session.rank + " returned: forming the group again");
            } else {
                prepare(IntStream.range(0, worldSize).toArray());
            }
        }
    }

    /**
     * {@code rank}'s worker is gone. Breaks the group, unless the rank was set aside and the group
     * serves without it anyway.
     */
    void onLost(int rank, String reason) {
        boolean outside =
                (links.isAside(rank) || evicted[rank]) && state.serving() && !state.inGroup(rank);
        links.forget(rank);
        if (outside) {
            LOG.warn("{}; it was set aside or evicted, the group serves on without it", reason);
        } else {
            breakGroup(reason);
        }
    }

    /**
     * {@code rank} was just flagged as a straggler. With eviction on, and when the others hold a
     * replica of every expert it hosts, the group forms without it; it is tried again after its
     * eviction time (30 s, doubled for each eviction after, up to 10 min).
     */
    void onStraggler(int rank) {
        if (!evictStragglers || evicted[rank]) {
            return;
        }
        int[] usable = usable();
        int[] without = Arrays.stream(usable).filter(r -> r != rank).toArray();
        if (without.length == usable.length || !degraded.covers(without)) {
            LOG.warn("straggler rank {} not evicted: only it hosts some experts", rank);
            return;
        }
        long evictNanos = evictFor[rank];
        evictFor[rank] = Math.min(MAX_EVICTION_NANOS, evictFor[rank] * 2);
        evicted[rank] = true;
        LOG.warn(
                "evicting straggler rank {} for {} s: the others serve its experts' tokens",
                rank,
                TimeUnit.NANOSECONDS.toSeconds(evictNanos));
        timer.schedule(
                () -> {
                    synchronized (lock) {
                        if (evicted[rank]) {
                            evicted[rank] = false;
                            breakGroup("trying evicted straggler rank " + rank + " again");
                        }
                    }
                },
                evictNanos,
                TimeUnit.NANOSECONDS);
        breakGroup("rank " + rank + " evicted as a straggler");
    }

    /** The held ranks that can take part: not set aside for a cut link, not evicted. */
    private int[] usable() {
        return Arrays.stream(links.usable(membership.heldRanks()))
                .filter(r -> !evicted[r])
                .toArray();
    }

    /**
     * {@code rank} reported a failure with {@code peer}: evidence against the link between them.
     */
    void onPeerNamed(int rank, int peer) {
        links.named(rank, peer, System.nanoTime());
    }

    /**
     * A step or rank task failed for {@code reason}: sets aside ranks whose links the reports show
     * cut, then breaks the group.
     */
    void onFailure(String reason) {
        List<LinkFaults.Link> cut = links.setAsideCut(membership.heldRanks(), System.nanoTime());
        if (cut.isEmpty()) {
            breakGroup(reason);
            return;
        }
        if (probing) {
            // a probe let the group form with the rank, and the link failed again
            links.backOff();
        }
        LOG.warn(
                "links cut between live workers: {}; forming without {} until the links are back"
                        + " (trying them again in {} ms)",
                cut,
                links.describeAside(),
                TimeUnit.NANOSECONDS.toMillis(links.probeDelayNanos()));
        scheduleProbe();
        breakGroup(reason + "; links cut: " + cut + ", set aside: " + links.describeAside());
    }

    /**
     * {@code rank} could not connect the epoch's group to a peer; once the members' reports settle,
     * the epoch fails as a step does.
     */
    void onGroupFailed(int rank, GroupFailed failed) {
        long epoch = failed.getEpoch();
        if (epoch != formation.epoch()) {
            return;
        }
        onPeerNamed(rank, failed.getPeer());
        String report = "cannot connect to rank " + failed.getPeer() + ": " + failed.getMessage();
        if (formFailures.report(epoch, rank, report)) {
            timer.schedule(
                    () -> {
                        synchronized (lock) {
                            settleFormation(epoch);
                        }
                    },
                    FailureReports.SETTLE_NANOS,
                    TimeUnit.NANOSECONDS);
        }
        if (formFailures.allReported(epoch, formation.members().length)) {
            settleFormation(epoch);
        }
    }

    private void settleFormation(long epoch) {
        String reason = formFailures.take(epoch);
        if (reason != null && epoch == formation.epoch()) {
            onFailure(reason);
        }
    }

    private void scheduleProbe() {
        if (probeScheduled) {
            return;
        }
        probeScheduled = true;
        timer.schedule(
                () -> {
                    synchronized (lock) {
                        probeScheduled = false;
                        probe();
                    }
                },
                links.probeDelayNanos(),
                TimeUnit.NANOSECONDS);
    }

    /**
     * Tries the set-aside ranks' links again. While the others serve, each set-aside worker is
     * asked to connect to its cut peer's data address, which does not disturb the serving group;
     * otherwise (nothing serves, or the peer is not in the group) the group forms with them.
     */
    private void probe() {
        int[] aside = links.asideRanks();
        if (aside.length == 0) {
            return;
        }
        long id = ++probeId;
        int asked = 0;
        for (int rank : aside) {
            int peer = links.cutPeer(rank);
            String address = state.serving() && peer >= 0 ? formation.address(peer) : null;
            if (address != null) {
                membership.sendTo(
                        new int[] {rank},
                        ControlMessage.newBuilder()
                                .setProbeLinks(
                                        ProbeLinks.newBuilder()
                                                .setProbeId(id)
                                                .addPeers(peer)
                                                .addAddresses(address)
                                                .setTimeoutMs(
                                                        TimeUnit.NANOSECONDS.toMillis(
                                                                PROBE_CONNECT_NANOS)))
                                .build());
                asked++;
            }
        }
        if (asked == aside.length) {
            // an answer that never comes counts as a link still cut
            timer.schedule(
                    () -> {
                        synchronized (lock) {
                            if (probeId == id && links.count() > 0) {
                                scheduleProbe();
                            }
                        }
                    },
                    2 * PROBE_CONNECT_NANOS,
                    TimeUnit.NANOSECONDS);
            return;
        }
        String described = links.describeAside();
        for (int rank : aside) {
            links.forget(rank);
        }
        probing = true;
        breakGroup("trying cut links again: " + described);
    }

    /** A set-aside worker's answer to a probe: forms the group with it once its link is back. */
    void onLinksProbed(int rank, LinksProbed probed) {
        if (probed.getProbeId() != probeId || !links.isAside(rank)) {
            return;
        }
        int peer = links.cutPeer(rank);
        probeId++; // answered: the unanswered-probe check stands down
        if (!probed.getReachableList().contains(peer)) {
            scheduleProbe();
            return;
        }
        LOG.info("rank {} reaches rank {} again: forming the group with it", rank, peer);
        links.forget(rank);
        probing = true;
        breakGroup("link " + Math.min(rank, peer) + "-" + Math.max(rank, peer) + " is back");
    }

    /** Records {@code rank}'s data address; a malformed one breaks the group. */
    void onBound(int rank, Bound bound) {
        String malformed = formation.onBound(rank, bound);
        if (malformed != null) {
            breakGroup(malformed);
        }
    }

    /** Serves once every member of the epoch's group is ready. */
    void onReady(int rank, long epoch) {
        if (!formation.onReady(rank, epoch)) {
            return;
        }
        degraded.restoreIfWhole(state.groupSize());
        if (state.groupSize() == worldSize) {
            links.whole();
            if (probing) {
                LOG.info("cut links are back: the whole group formed");
            }
        }
        probing = false;
        state.serve();
        final long formedIn = formation.formingNanos();
        final long formedEpoch = formation.epoch();
        LOG.info(
                "serving: epoch={}, group formed in {} ms",
                formedEpoch,
                TimeUnit.NANOSECONDS.toMillis(formedIn));
        timer.execute(() -> listener.onServing(formedEpoch, formedIn));
    }

    /**
     * Fails the work in flight, tells every worker to drop the group, and re-forms it if it can.
     */
    void breakGroup(String reason) {
        boolean wasUp = state.serving() || formation.started();
        state.stop(reason);
        failInFlight.accept(new A2aException(reason));
        formation.abort(reason);
        formFailures.clear();
        LOG.warn("group broken: epoch={}, reason={}", formation.epoch(), reason);
        if (wasUp) {
            rebuilds++;
        }
        timer.execute(() -> listener.onNotServing(reason));
        int[] usable = usable();
        if (usable.length == worldSize) {
            prepare(usable);
        } else {
            int[] left = degraded.degrade(reason, usable);
            if (left != null) {
                prepare(left);
            }
        }
    }

    private void prepare(int[] ranks) {
        state.formWith(ranks);
        GroupPlan plan = membership.plan(ranks);
        formation.prepare(ranks, plan);
        LOG.info(
                "forming group: epoch={}, ranks={}, transport={} ({})",
                formation.epoch(),
                Arrays.toString(ranks),
                plan,
                plan.why());
    }
}
