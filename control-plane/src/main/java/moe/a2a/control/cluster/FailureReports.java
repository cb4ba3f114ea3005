package moe.a2a.control.cluster;

import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * The failures the ranks of a group report for one piece of work (a step, or a group epoch they
 * could not connect), gathered before the group is broken. One failed rank makes the others fail
 * too (a peer that aborts closes its connections), and their reports race to the coordinator: the
 * first one to arrive is often only the echo ("connection closed") of the cause another rank saw.
 * So a piece's reports are gathered until every rank of the group has reported, or {@link
 * #SETTLE_NANOS} after the first, and the reason names them all, by rank. Not thread-safe: guarded
 * by {@link RemoteCluster}'s lock.
 */
final class FailureReports {
    /**
     * How long the first report of a step waits for the others. Every rank of an aborted exchange
     * reports within milliseconds of the first on this machine's loopback; a rank that never
     * reports (stopped, or it finished its part) costs only this wait.
     */
    static final long SETTLE_NANOS = 250_000_000L;

    private final String what;
    private final Map<Long, TreeMap<Integer, String>> byStep = new HashMap<>();

    /**
     * @param what the work the reports are about, as the reason names it ("step", say)
     */
    FailureReports(String what) {
        this.what = what;
    }

    /**
     * Records {@code rank}'s failure of {@code step}.
     *
     * @return true if it is the step's first report, so the caller starts the settle wait
     */
    boolean report(long step, int rank, String message) {
        TreeMap<Integer, String> reports = byStep.get(step);
        boolean first = reports == null;
        if (first) {
            reports = new TreeMap<>();
            byStep.put(step, reports);
        }
        reports.putIfAbsent(rank, message);
        return first;
    }

    /** Whether {@code ranks} ranks have reported {@code step}'s failure. */
    boolean allReported(long step, int ranks) {
        TreeMap<Integer, String> reports = byStep.get(step);
        return reports != null && reports.size() >= ranks;
    }

    /**
     * The reason naming every report of {@code step}, and forgets it; null if none is left (the
     * group broke for another reason meanwhile).
     */
    @Nullable String take(long step) {
        TreeMap<Integer, String> reports = byStep.remove(step);
        if (reports == null) {
            return null;
        }
        StringBuilder reason = new StringBuilder(what).append(' ').append(step).append(" failed");
        String sep = " on rank ";
        for (Map.Entry<Integer, String> e : reports.entrySet()) {
            reason.append(sep).append(e.getKey()).append(": ").append(e.getValue());
            sep = "; on rank ";
        }
        return reason.toString();
    }

    /** Forgets every report: the group broke, and every step with it. */
    void clear() {
        byStep.clear();
    }
}
