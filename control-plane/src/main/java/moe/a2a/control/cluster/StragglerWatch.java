package moe.a2a.control.cluster;

import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import moe.a2a.metrics.ExchangeWaitMetrics;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds the rank the others wait on. Every rank reports, per step, how long it waited for each
 * peer's frames in dispatch and combine (how late each peer's frames came into its exchange calls,
 * as its transport measured it); over a window of steps the watch sums, for each peer, the waits of
 * all the others on it. A rank is flagged as a straggler when the others waited on it more than
 * {@code factor} times as long as on the median rank, and at least {@link #MIN_WAIT_NANOS} per step
 * each; a later window back under the factor clears the flag. Each change is logged naming the
 * rank, and shows in {@code moe_a2a_rank_straggler}. A group of fewer than three ranks has no
 * median to compare with and flags none. Not thread-safe: guarded by {@link RemoteCluster}'s lock.
 */
public final class StragglerWatch {
    /** Logs under the cluster's name, the one category operators follow. */
    private static final Logger LOG = LoggerFactory.getLogger(RemoteCluster.class);

    /** Waits shorter than this per step are noise, whatever the factor. */
    static final long MIN_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private static final int[] NONE = new int[0];

    /**
     * @param factor how many times the median rank's wait makes a straggler
     * @param window the steps each judgement sums over
     * @param evict whether a flagged rank is served around, as a lost one, where replicas allow
     * @param firstEvictionNanos how long a rank's first eviction lasts (each one after doubles it,
     *     up to {@link StragglerEvictions#MAX_NANOS})
     */
    public record Settings(double factor, int window, boolean evict, long firstEvictionNanos) {
        /** --straggler-factor 3, --straggler-window 32, no eviction. */
        public static final Settings DEFAULT = new Settings(3, 32, false);

        /** First evictions of {@link StragglerEvictions#FIRST_NANOS}. */
        public Settings(double factor, int window, boolean evict) {
            this(factor, window, evict, StragglerEvictions.FIRST_NANOS);
        }

        /**
         * @throws IllegalArgumentException naming the flag
         */
        public Settings {
            if (!(factor > 1) || Double.isInfinite(factor)) {
                throw new IllegalArgumentException(
                        "--straggler-factor: " + factor + " (expected: a finite number > 1)");
            }
            if (window < 1) {
                throw new IllegalArgumentException(
                        "--straggler-window: " + window + " (expected: >= 1 steps)");
            }
            if (firstEvictionNanos < TimeUnit.SECONDS.toNanos(1)
                    || firstEvictionNanos > StragglerEvictions.MAX_NANOS) {
                throw new IllegalArgumentException(
                        "--straggler-eviction: "
                                + Duration.ofNanos(firstEvictionNanos)
                                + " (expected: from 1s to 10m)");
            }
        }
    }

    private final Settings settings;
    private final @Nullable ExchangeWaitMetrics metrics;
    private final long[] waitedOn;
    private final boolean[] reported;
    private final boolean[] flagged;
    private int results;

    public StragglerWatch(Settings settings, int worldSize, @Nullable ExchangeWaitMetrics metrics) {
        this.settings = settings;
        this.metrics = metrics;
        this.waitedOn = new long[worldSize];
        this.reported = new boolean[worldSize];
        this.flagged = new boolean[worldSize];
    }

    /**
     * Counts {@code rank}'s waits of one step, in a group of {@code groupSize} ranks, and judges
     * the window once it holds {@code window} steps of every rank.
     *
     * @return the ranks that judgement newly flagged (usually none)
     */
    int[] onWaits(int rank, long[] dispatchNs, long[] combineNs, int groupSize) {
        if (metrics != null) {
            metrics.onWaits(rank, dispatchNs, combineNs);
        }
        reported[rank] = true;
        for (int p = 0; p < waitedOn.length && p < dispatchNs.length; p++) {
            if (p != rank) {
                waitedOn[p] += dispatchNs[p] + combineNs[p];
            }
        }
        return ++results >= settings.window() * groupSize ? judge() : NONE;
    }

    Settings settings() {
        return settings;
    }

    /** Whether {@code rank} is flagged now. */
    boolean flagged(int rank) {
        return flagged[rank];
    }

    /** Forgets the window: the group changed, and with it who waits on whom. */
    void reset() {
        Arrays.fill(waitedOn, 0);
        Arrays.fill(reported, false);
        results = 0;
    }

    private int[] judge() {
        IntStream.Builder newly = IntStream.builder();
        int[] ranks = IntStream.range(0, waitedOn.length).filter(r -> reported[r]).toArray();
        if (ranks.length >= 3) {
            for (int r : ranks) {
                long[] others =
                        Arrays.stream(ranks)
                                .filter(q -> q != r)
                                .mapToLong(q -> waitedOn[q])
                                .sorted()
                                .toArray();
                double median =
                        others.length % 2 == 1
                                ? others[others.length / 2]
                                : (others[others.length / 2 - 1] + others[others.length / 2]) / 2.0;
                // per step and waiting rank
                double perStep = waitedOn[r] / (double) settings.window() / others.length;
                boolean slow =
                        perStep >= MIN_WAIT_NANOS && waitedOn[r] > settings.factor() * median;
                if (slow != flagged[r]) {
                    flagged[r] = slow;
                    if (metrics != null) {
                        metrics.flag(r, slow);
                    }
                    if (slow) {
                        newly.add(r);
                        LOG.warn(
                                "rank {} is a straggler: the others waited {} ms per step on it,"
                                        + " {} ms on the median rank (last {} steps)",
                                r,
                                String.format(Locale.ROOT, "%.1f", perStep / 1e6),
                                String.format(
                                        Locale.ROOT,
                                        "%.1f",
                                        median / settings.window() / others.length / 1e6),
                                settings.window());
                    } else {
                        LOG.info("rank {} keeps up again ({} steps)", r, settings.window());
                    }
                }
            }
        }
        reset();
        return newly.build().toArray();
    }
}
