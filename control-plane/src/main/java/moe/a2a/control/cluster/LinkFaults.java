package moe.a2a.control.cluster;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

/**
 * Which links between live workers are cut, and which ranks the group is formed without until they
 * are back. Every failure a rank reports naming a peer (it waited for it past the exchange timeout,
 * lost its connection, or could not connect) is evidence against the link from that rank to that
 * peer. A link counts as cut once each of its two ends has named the other within {@link
 * #EVIDENCE_NANOS}: a stopped or slow rank is named by its peers but names none of them, so it is
 * never taken for a cut link (its heartbeats, or the exchange deadline, find it out).
 *
 * <p>Ranks are set aside so that no cut link joins two ranks of the group: greedily the end with
 * the most cut links, the higher rank on a tie. A set-aside rank keeps its session and is probed
 * every {@link #probeDelayNanos()}: {@link #FIRST_PROBE_NANOS}, doubled up to {@link
 * #MAX_PROBE_NANOS} each time a probe let the group form with it and the link failed again, and
 * back to the first once the whole group formed. Not thread-safe: guarded by {@link
 * RemoteCluster}'s lock.
 */
final class LinkFaults {
    /** How long a rank's report against a link counts. */
    static final long EVIDENCE_NANOS = TimeUnit.SECONDS.toNanos(60);

    static final long FIRST_PROBE_NANOS = TimeUnit.SECONDS.toNanos(1);
    static final long MAX_PROBE_NANOS = TimeUnit.SECONDS.toNanos(30);

    /** A cut link between two ranks, {@code low < high}. */
    record Link(int low, int high) {
        @Override
        public String toString() {
            return low + "-" + high;
        }
    }

    private final int worldSize;

    private static final long NEVER = Long.MIN_VALUE;

    /** When rank r last named peer p ({@code [r * worldSize + p]}), or {@link #NEVER}. */
    private final long[] namedAt;

    private final boolean[] aside;

    /** The cut link each set-aside rank was set aside for. */
    private final Link[] asideFor;

    private long probeDelayNanos = FIRST_PROBE_NANOS;

    LinkFaults(int worldSize) {
        this.worldSize = worldSize;
        this.namedAt = new long[worldSize * worldSize];
        Arrays.fill(namedAt, NEVER);
        this.aside = new boolean[worldSize];
        this.asideFor = new Link[worldSize];
    }

    /** {@code rank} reported a failure with {@code peer} at {@code nowNanos}. */
    void named(int rank, int peer, long nowNanos) {
        if (rank == peer || rank < 0 || peer < 0 || rank >= worldSize || peer >= worldSize) {
            return;
        }
        namedAt[rank * worldSize + peer] = nowNanos;
    }

    /**
     * Sets aside ranks so that no link cut at {@code nowNanos} joins two ranks of {@code held} that
     * are not set aside already.
     *
     * @return the links newly found cut (empty when none, and nothing changed)
     */
    List<Link> setAsideCut(int[] held, long nowNanos) {
        List<Link> cut = new ArrayList<>();
        for (int i = 0; i < held.length; i++) {
            for (int j = i + 1; j < held.length; j++) {
                int a = held[i];
                int b = held[j];
                if (!aside[a] && !aside[b] && recent(a, b, nowNanos) && recent(b, a, nowNanos)) {
                    cut.add(new Link(a, b));
                }
            }
        }
        List<Link> open = new ArrayList<>(cut);
        while (!open.isEmpty()) {
            int[] degree = new int[worldSize];
            for (Link l : open) {
                degree[l.low()]++;
                degree[l.high()]++;
            }
            int pick = 0;
            for (int r = 1; r < worldSize; r++) {
                pick = degree[r] >= degree[pick] ? r : pick;
            }
            for (Link l : open) {
                if (l.low() == pick || l.high() == pick) {
                    asideFor[pick] = l;
                    break;
                }
            }
            aside[pick] = true;
            final int gone = pick;
            open.removeIf(l -> l.low() == gone || l.high() == gone);
        }
        return cut;
    }

    /** Whether {@code rank} is set aside. */
    boolean isAside(int rank) {
        return aside[rank];
    }

    /** Ranks set aside now. */
    int count() {
        int n = 0;
        for (boolean a : aside) {
            n += a ? 1 : 0;
        }
        return n;
    }

    /** The ranks of {@code held} that are not set aside, ascending. */
    int[] usable(int[] held) {
        return Arrays.stream(held).filter(r -> !aside[r]).toArray();
    }

    /** For the log: each set-aside rank and the link it was set aside for. */
    String describeAside() {
        StringBuilder s = new StringBuilder();
        for (int r = 0; r < worldSize; r++) {
            if (aside[r]) {
                s.append(s.isEmpty() ? "" : ", ")
                        .append("rank ")
                        .append(r)
                        .append(" (link ")
                        .append(asideFor[r])
                        .append(")");
            }
        }
        return s.toString();
    }

    /** The peer {@code rank} was set aside for (the other end of its cut link), or -1. */
    int cutPeer(int rank) {
        Link l = asideFor[rank];
        return l == null ? -1 : l.low() == rank ? l.high() : l.low();
    }

    /** The ranks set aside now, ascending. */
    int[] asideRanks() {
        return IntStream.range(0, worldSize).filter(r -> aside[r]).toArray();
    }

    /** The delay before ranks set aside now are probed. */
    long probeDelayNanos() {
        return probeDelayNanos;
    }

    /** A probe let the group form with a set-aside rank and its link failed again: wait longer. */
    void backOff() {
        probeDelayNanos = Math.min(MAX_PROBE_NANOS, probeDelayNanos * 2);
    }

    /** The whole group formed: every link works, the probe delay starts over. */
    void whole() {
        probeDelayNanos = FIRST_PROBE_NANOS;
    }

    /**
     * {@code rank} lost its worker, or is taken back to try its link again: neither set aside nor
     * named any more, so that only new failures set it aside again.
     */
    void forget(int rank) {
        aside[rank] = false;
        asideFor[rank] = null;
        for (int p = 0; p < worldSize; p++) {
            namedAt[rank * worldSize + p] = NEVER;
            namedAt[p * worldSize + rank] = NEVER;
        }
    }

    private boolean recent(int rank, int peer, long nowNanos) {
        long at = namedAt[rank * worldSize + peer];
        return at != NEVER && nowNanos - at <= EVIDENCE_NANOS;
    }
}
