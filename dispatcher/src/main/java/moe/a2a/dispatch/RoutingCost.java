package moe.a2a.dispatch;

/**
 * What a step's routing costs, counted exactly per destination rank: the (token, expert) pairs its
 * experts compute ({@code pairs}), the rows it receives in dispatch with its own included ({@code
 * rowsRecv}), and those from other ranks alone ({@code rowsRemoteRecv}). A token is one row on each
 * rank it visits, however many of its experts that rank holds; so a placement that spreads a
 * token's experts over more ranks balances {@code pairs} and pays in rows. Immutable.
 */
public final class RoutingCost {
    private final long[] pairs;
    private final long[] rowsRecv;
    private final long[] rowsRemoteRecv;
    private final long[][] rows;

    private RoutingCost(long[] pairs, long[] rowsRecv, long[] rowsRemoteRecv, long[][] rows) {
        this.pairs = pairs;
        this.rowsRecv = rowsRecv;
        this.rowsRemoteRecv = rowsRemoteRecv;
        this.rows = rows;
    }

    /**
     * The cost of one step from each source rank's dispatch: {@code rows[src][dst]} tokens of
     * {@code src} sent to {@code dst} (deduplicated), {@code pairs[src][dst]} of its token×k
     * assignments routed there.
     *
     * @throws IllegalArgumentException when the two are not square and of one size
     */
    public static RoutingCost of(long[][] rows, long[][] pairs) {
        final int n = rows.length;
        if (pairs.length != n) {
            throw new IllegalArgumentException(
                    "pairs: " + pairs.length + " source ranks (expected: " + n + ", as rows)");
        }
        final long[] pairsTo = new long[n];
        final long[] rowsTo = new long[n];
        final long[] remoteTo = new long[n];
        final long[][] copy = new long[n][];
        for (int src = 0; src < n; src++) {
            if (rows[src].length != n || pairs[src].length != n) {
                throw new IllegalArgumentException(
                        "rows/pairs: source rank "
                                + src
                                + " has "
                                + rows[src].length
                                + "/"
                                + pairs[src].length
                                + " destinations (expected: "
                                + n
                                + ")");
            }
            copy[src] = rows[src].clone();
            for (int dst = 0; dst < n; dst++) {
                pairsTo[dst] += pairs[src][dst];
                rowsTo[dst] += rows[src][dst];
                remoteTo[dst] += src == dst ? 0 : rows[src][dst];
            }
        }
        return new RoutingCost(pairsTo, rowsTo, remoteTo, copy);
    }

    /** The cost of {@code layouts[src]}, each source rank's layout of the same step. */
    public static RoutingCost of(DispatchLayout[] layouts) {
        final int n = layouts.length;
        final long[][] rows = new long[n][n];
        final long[][] pairs = new long[n][n];
        for (int src = 0; src < n; src++) {
            for (int dst = 0; dst < n; dst++) {
                rows[src][dst] = layouts[src].tokensPerRank(dst);
                pairs[src][dst] = layouts[src].pairsPerRank(dst);
            }
        }
        return of(rows, pairs);
    }

    public int worldSize() {
        return pairs.length;
    }

    /** (token, expert) pairs that {@code rank}'s experts compute. */
    public long pairs(int rank) {
        return pairs[rank];
    }

    /** Rows {@code rank} receives in dispatch, its own included. */
    public long rowsRecv(int rank) {
        return rowsRecv[rank];
    }

    /** Rows {@code rank} receives in dispatch from other ranks. */
    public long rowsRemoteRecv(int rank) {
        return rowsRemoteRecv[rank];
    }

    /** Rows {@code src} sends to {@code dst} in dispatch (and gets back in combine). */
    public long rows(int src, int dst) {
        return rows[src][dst];
    }

    /** Max over mean of {@link #pairs}: 1 is even; 0 when there are none. */
    public double pairsMaxOverMean() {
        return maxOverMean(pairs);
    }

    /** Rows summed over ranks: a token counts once for each rank it visits, its own included. */
    public long rowsTotal() {
        return sum(rowsRecv);
    }

    /** The busiest rank's {@link #rowsRecv}. */
    public long rowsRecvMax() {
        return max(rowsRecv);
    }

    /** Max over mean of {@link #rowsRecv}: 1 is even; 0 when there are none. */
    public double rowsRecvMaxOverMean() {
        return maxOverMean(rowsRecv);
    }

    /** {@link #rowsRemoteRecv} summed over ranks: the rows that cross between ranks. */
    public long rowsRemoteTotal() {
        return sum(rowsRemoteRecv);
    }

    private static double maxOverMean(long[] counts) {
        final long total = sum(counts);
        return total == 0 ? 0 : max(counts) * (double) counts.length / total;
    }

    private static long sum(long[] counts) {
        long total = 0;
        for (long c : counts) {
            total += c;
        }
        return total;
    }

    private static long max(long[] counts) {
        long most = 0;
        for (long c : counts) {
            most = Math.max(most, c);
        }
        return most;
    }
}
