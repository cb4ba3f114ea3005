package moe.a2a.cli;

import java.util.Locale;
import moe.a2a.v1.ClusterState;
import moe.a2a.v1.RankCondition;
import moe.a2a.v1.RankState;

/** A cluster's state as {@code health --ranks} prints it: a headline, then a row per rank. */
final class ClusterTable {
    private static final String ROW = "%-5s %-12s %-10s %-36s %s";
    private static final String PREFIX = "RANK_CONDITION_";

    private ClusterTable() {}

    static String format(String target, ClusterState state) {
        long serving =
                state.getRanksList().stream()
                        .filter(r -> r.getCondition() == RankCondition.RANK_CONDITION_SERVING)
                        .count();
        StringBuilder out = new StringBuilder();
        out.append(target)
                .append(": ")
                .append(state.getServing() ? "SERVING" : "NOT_SERVING")
                .append(", epoch ")
                .append(state.getEpoch())
                .append(", ")
                .append(serving)
                .append(" of ")
                .append(state.getWorldSize())
                .append(" ranks serve");
        if (!state.getReason().isEmpty()) {
            out.append(" (").append(state.getReason()).append(')');
        }
        out.append(System.lineSeparator());
        row(out, "rank", "condition", "straggler", "worker", "why");
        for (RankState rank : state.getRanksList()) {
            row(
                    out,
                    rank.getRank(),
                    label(rank.getCondition()),
                    rank.getStraggler() ? "yes" : "no",
                    rank.getWorker().isEmpty() ? "-" : rank.getWorker(),
                    rank.getReason());
        }
        return out.toString();
    }

    private static void row(StringBuilder out, Object... cells) {
        out.append(String.format(Locale.ROOT, ROW, cells).stripTrailing())
                .append(System.lineSeparator());
    }

    /** RANK_CONDITION_PARTITIONED as "partitioned"; a condition newer than this client as is. */
    private static String label(RankCondition condition) {
        String name = condition.name();
        return name.startsWith(PREFIX)
                ? name.substring(PREFIX.length()).toLowerCase(Locale.ROOT)
                : name;
    }
}
