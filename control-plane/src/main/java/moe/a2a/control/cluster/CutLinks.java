package moe.a2a.control.cluster;

import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;
import moe.a2a.v1.ControlMessage;
import moe.a2a.v1.GroupFailed;
import moe.a2a.v1.LinksProbed;
import moe.a2a.v1.ProbeLinks;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link GroupConductor}'s handling of cut links between live workers: it gathers the peers
 * ranks name in their failures ({@link LinkFaults}), and when a failure's reports show a cut link
 * it sets one end aside before the group breaks. A set-aside worker is then probed: while the
 * others serve, it is asked to open a plain connection to its cut peer ({@link ProbeLinks}), which
 * does not disturb them, every {@link LinkFaults#probeDelayNanos()}; when nothing serves, the peer
 * is not in the group, or the group runs on no network transport (one host's ranks on shm: the peer
 * keeps no listener to probe), the group forms with it instead. A probe after which the link fails
 * again doubles the delay. Not thread-safe: guarded by {@link RemoteCluster}'s lock, which the
 * timer tasks it schedules take too.
 */
final class CutLinks {
    /** Logs under the cluster's name, the one category operators follow. */
    private static final Logger LOG = LoggerFactory.getLogger(RemoteCluster.class);

    /** How long a set-aside worker's probe may try to connect to its cut peer. */
    static final long PROBE_CONNECT_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final Object lock;
    private final ServingState state;
    private final Membership membership;
    private final GroupFormation formation;
    private final ScheduledExecutorService timer;

    /** Breaks the group for a reason; called with the lock held. */
    private final Consumer<String> breakGroup;

    private final LinkFaults links;

    /** Ranks' failures to connect an epoch's group, gathered before it is broken. */
    private final FailureReports formFailures = new FailureReports("group epoch");

    private boolean probeScheduled;

    /** The last probe sent to set-aside workers; a later one makes earlier answers stale. */
    private long probeId;

    /** Whether the epoch forming tries links that were cut. */
    private boolean probing;

    CutLinks(
            Object lock,
            ServingState state,
            Membership membership,
            GroupFormation formation,
            int worldSize,
            ScheduledExecutorService timer,
            Consumer<String> breakGroup) {
        this.lock = lock;
        this.state = state;
        this.membership = membership;
        this.formation = formation;
        this.timer = timer;
        this.breakGroup = breakGroup;
        this.links = new LinkFaults(worldSize);
    }

    /** Ranks set aside now. */
    int count() {
        return links.count();
    }

    boolean isAside(int rank) {
        return links.isAside(rank);
    }

    /** The peer {@code rank} was set aside for (the other end of its cut link), or -1. */
    int cutPeer(int rank) {
        return links.cutPeer(rank);
    }

    /** The ranks of {@code held} that are not set aside, ascending. */
    int[] usable(int[] held) {
        return links.usable(held);
    }

    /** {@code rank}'s worker is gone: neither set aside nor named any more. */
    void forget(int rank) {
        links.forget(rank);
    }

    /**
     * {@code rank} reported a failure with {@code peer}: evidence against the link between them.
     */
    void onPeerNamed(int rank, int peer) {
        links.named(rank, peer, System.nanoTime());
    }

    /**
     * A step, rank task or group epoch failed for {@code reason}: sets aside ranks whose links the
     * reports show cut, then breaks the group.
     */
    void onFailure(String reason) {
        List<LinkFaults.Link> cut = links.setAsideCut(membership.heldRanks(), System.nanoTime());
        if (cut.isEmpty()) {
            breakGroup.accept(reason);
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
        breakGroup.accept(reason + "; links cut: " + cut + ", set aside: " + links.describeAside());
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
        String report = failed.getMessage();
        if (failed.hasPeer()) {
            onPeerNamed(rank, failed.getPeer());
            report = "cannot connect to rank " + failed.getPeer() + ": " + report;
        }
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
        if (links.count() > 0) {
            scheduleProbe();
        }
        breakGroup.accept("link " + Math.min(rank, peer) + "-" + Math.max(rank, peer) + " is back");
    }

    /** The group broke: the formation failures gathered are stale. */
    void onBreak() {
        formFailures.clear();
    }

    /** An epoch's group serves; {@code whole} when it holds every rank. */
    void onServing(boolean whole) {
        if (whole) {
            links.whole();
            if (probing) {
                LOG.info("cut links are back: the whole group formed");
            }
        }
        probing = false;
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

    /** Probes each set-aside rank's link, or forms the group with them where it cannot. */
    private void probe() {
        int[] aside = links.asideRanks();
        if (aside.length == 0) {
            return;
        }
        long id = ++probeId;
        int asked = 0;
        for (int rank : aside) {
            int peer = links.cutPeer(rank);
            // only a group on the network keeps a listener at the peer's address to probe (one
            // host's group on shm has none)
            String address =
                    state.serving()
                                    && peer >= 0
                                    && Transports.reach(formation.transport())
                                            == TransportReach.NETWORK
                            ? formation.address(peer)
                            : null;
            if (address != null) {
                membership.sendTo(new int[] {rank}, probeMessage(id, peer, address));
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
        breakGroup.accept("trying cut links again: " + described);
    }

    private static ControlMessage probeMessage(long id, int peer, String address) {
        return ControlMessage.newBuilder()
                .setProbeLinks(
                        ProbeLinks.newBuilder()
                                .setProbeId(id)
                                .addPeers(peer)
                                .addAddresses(address)
                                .setTimeoutMs(TimeUnit.NANOSECONDS.toMillis(PROBE_CONNECT_NANOS)))
                .build();
    }
}
