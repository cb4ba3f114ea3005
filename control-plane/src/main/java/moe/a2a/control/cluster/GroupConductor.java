package moe.a2a.control.cluster;

import java.time.Instant;
import java.util.Arrays;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.IntStream;
import moe.a2a.comm.A2aException;
import moe.a2a.v1.Bound;
import moe.a2a.v1.GroupFailed;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Drives the rank group from epoch to epoch: forms it once every rank is taken, starts serving when
 * every member is ready, and on a loss or failure breaks it (failing the work in flight) and forms
 * it again, whole or, when {@link DegradedServing} allows, without the lost ranks. A failure whose
 * reports show a cut link between two live workers ({@link CutLinks}) sets one of its ends aside:
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

    private final CutLinks cutLinks;

    /** Ranks evicted as stragglers; null unless --evict-stragglers. */
    private final @Nullable StragglerEvictions evictions;

    /** Why each rank was last lost; null for a rank that has not been. */
    private final @Nullable String[] lostFor;

    private int rebuilds;

    GroupConductor(
            Object lock,
            ServingState state,
            Membership membership,
            GroupFormation formation,
            DegradedServing degraded,
            int worldSize,
            ScheduledExecutorService timer,
            ClusterListener listener,
            StragglerWatch.Settings stragglers,
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
        this.cutLinks =
                new CutLinks(
                        lock, state, membership, formation, worldSize, timer, this::breakGroup);
        this.evictions =
                stragglers.evict()
                        ? new StragglerEvictions(worldSize, stragglers.firstEvictionNanos())
                        : null;
        this.lostFor = new String[worldSize];
    }

    /** Times the group was broken and had to form again. */
    int rebuilds() {
        return rebuilds;
    }

    /** Ranks set aside for cut links. */
    int partitioned() {
        return cutLinks.count();
    }

    /** Where failures naming peers, failed formations and link probes go. */
    CutLinks cutLinks() {
        return cutLinks;
    }

    /** Why {@code rank} was last lost, or null when it never was. */
    @Nullable String lostFor(int rank) {
        return lostFor[rank];
    }

    /** Whether {@code rank} is evicted as a straggler now. */
    boolean isEvicted(int rank) {
        return evictions != null && evictions.isEvicted(rank);
    }

    /** When evicted {@code rank} is tried again; only while it is evicted. */
    Instant readmitAt(int rank) {
        return evictions.readmitAt(rank);
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
     * {@code rank}'s worker is gone. Breaks the group, unless the rank was set aside or evicted and
     * the group serves without it anyway.
     */
    void onLost(int rank, String reason) {
        boolean apart = cutLinks.isAside(rank) || isEvicted(rank);
        boolean outside = apart && state.serving() && !state.inGroup(rank);
        lostFor[rank] = reason;
        cutLinks.forget(rank);
        if (evictions != null) {
            evictions.readmit(rank);
        }
        if (outside) {
            LOG.warn("{}; it was set aside or evicted, the group serves on without it", reason);
        } else {
            breakGroup(reason);
        }
    }

    /**
     * A step or rank task failed for {@code reason}: sets aside ranks whose links the reports show
     * cut, then breaks the group.
     */
    void onFailure(String reason) {
        cutLinks.onFailure(reason);
    }

    /**
     * {@code rank} was just flagged as a straggler. With eviction on, and when the others hold a
     * replica of every expert it hosts, the group forms without it; it is tried again after its
     * eviction ({@link StragglerEvictions}).
     */
    void onStraggler(int rank) {
        if (evictions == null || evictions.isEvicted(rank)) {
            return;
        }
        int[] usable = usable();
        int[] without = Arrays.stream(usable).filter(r -> r != rank).toArray();
        if (without.length == usable.length || !degraded.covers(without)) {
            LOG.warn("straggler rank {} not evicted: only it hosts some experts", rank);
            return;
        }
        long nanos = evictions.evict(rank);
        LOG.warn(
                "evicting straggler rank {} for {} s: the others serve its experts' tokens",
                rank,
                TimeUnit.NANOSECONDS.toSeconds(nanos));
        timer.schedule(
                () -> {
                    synchronized (lock) {
                        if (evictions.readmit(rank)) {
                            breakGroup("trying evicted straggler rank " + rank + " again");
                        }
                    }
                },
                nanos,
                TimeUnit.NANOSECONDS);
        breakGroup("rank " + rank + " evicted as a straggler");
    }

    /**
     * {@code rank}'s worker could not connect the epoch's group because it cannot run a transport
     * now (its shm folder is full, say). Under auto the group forms again without that transport on
     * it for a while (10 s, doubling each time it says so again), which the log says; false when
     * that cannot be (a fixed transport), for the caller to drop the worker, which rejoins with
     * backoff.
     */
    boolean onPlaneUnavailable(int rank, GroupFailed failed) {
        if (failed.getEpoch() != formation.epoch()) {
            return true;
        }
        long retryNanos = membership.withdraw(rank, failed.getUnavailable(), System.nanoTime());
        if (retryNanos < 0) {
            return false;
        }
        String reason =
                "rank "
                        + rank
                        + " cannot run "
                        + failed.getUnavailable()
                        + " ("
                        + failed.getMessage()
                        + "); planning rank "
                        + rank
                        + " without "
                        + failed.getUnavailable()
                        + " for "
                        + TimeUnit.NANOSECONDS.toSeconds(retryNanos)
                        + " s, then at the next formation";
        LOG.warn(reason);
        breakGroup(reason);
        return true;
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
        cutLinks.onServing(state.groupSize() == worldSize);
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
        cutLinks.onBreak();
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

    /** The held ranks that can take part: not set aside for a cut link, not evicted. */
    private int[] usable() {
        int[] ranks = cutLinks.usable(membership.heldRanks());
        return evictions == null ? ranks : evictions.without(ranks);
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
