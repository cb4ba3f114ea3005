package moe.a2a.control.cluster;

import java.util.Arrays;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.IntStream;
import moe.a2a.comm.A2aException;
import moe.a2a.v1.Bound;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Drives the rank group from epoch to epoch: forms it once every rank is taken, starts serving when
 * every member is ready, and on a loss or failure breaks it (failing the work in flight) and forms
 * it again, whole or, when {@link DegradedServing} allows, without the lost ranks. Not thread-safe:
 * guarded by {@link RemoteCluster}'s lock; listeners are told on the timer thread, outside the
 * lock.
 */
final class GroupConductor {
    /** Logs under the cluster's name, the one category operators follow. */
    private static final Logger LOG = LoggerFactory.getLogger(RemoteCluster.class);

    private final ServingState state;
    private final Membership membership;
    private final GroupFormation formation;
    private final DegradedServing degraded;
    private final int worldSize;
    private final ScheduledExecutorService timer;
    private final ClusterListener listener;

    /** Fails every step, rank task and staging in flight; called with the lock held. */
    private final Consumer<A2aException> failInFlight;

    private int rebuilds;

    GroupConductor(
            ServingState state,
            Membership membership,
            GroupFormation formation,
            DegradedServing degraded,
            int worldSize,
            ScheduledExecutorService timer,
            ClusterListener listener,
            Consumer<A2aException> failInFlight) {
        this.state = state;
        this.membership = membership;
        this.formation = formation;
        this.degraded = degraded;
        this.worldSize = worldSize;
        this.timer = timer;
        this.listener = listener;
        this.failInFlight = failInFlight;
    }

    /** Times the group was broken and had to form again. */
    int rebuilds() {
        return rebuilds;
    }

    /** Forms the group once {@code session} took the last free rank. */
    void onJoined(WorkerSession session) {
        LOG.info("{} joined ({}/{} ranks)", session, membership.joined(), worldSize);
        if (membership.full()) {
            if (degraded.degraded()) {
                // serving without lost ranks: re-form whole, so the returning rank serves
                breakGroup("rank " + session.rank + " returned: forming the whole group");
            } else {
                prepare(IntStream.range(0, worldSize).toArray());
            }
        }
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
        LOG.warn("group broken: epoch={}, reason={}", formation.epoch(), reason);
        if (wasUp) {
            rebuilds++;
        }
        timer.execute(() -> listener.onNotServing(reason));
        if (membership.full()) {
            prepare(IntStream.range(0, worldSize).toArray());
        } else {
            int[] left = degraded.degrade(reason);
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
