package moe.a2a.metrics;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * How long ranks wait for each peer, and which ranks are flagged as stragglers. The wait histograms
 * have fixed buckets (1 ms to 10 s) and one series per (phase, peer), so a cluster of N ranks adds
 * 2N histograms however many ranks wait: the peer everybody waits on stands out. Thread-safe as
 * Micrometer's meters are; the flags are read when scraped.
 */
public final class ExchangeWaitMetrics {
    private static final Duration[] BUCKETS = {
        Duration.ofMillis(1),
        Duration.ofMillis(5),
        Duration.ofMillis(20),
        Duration.ofMillis(100),
        Duration.ofMillis(500),
        Duration.ofSeconds(2),
        Duration.ofSeconds(10)
    };

    private final Timer[] dispatch;
    private final Timer[] combine;
    private final int[] flagged;

    public ExchangeWaitMetrics(MeterRegistry registry, int worldSize) {
        this.dispatch = new Timer[worldSize];
        this.combine = new Timer[worldSize];
        this.flagged = new int[worldSize];
        for (int p = 0; p < worldSize; p++) {
            dispatch[p] = timer(registry, "dispatch", p);
            combine[p] = timer(registry, "combine", p);
            final int rank = p;
            Gauge.builder(A2aMeters.RANK_STRAGGLER.meterName(), this, m -> m.flagged[rank])
                    .strongReference(true)
                    .description(A2aMeters.RANK_STRAGGLER.description())
                    .tag("rank", Integer.toString(p))
                    .register(registry);
        }
    }

    /** One rank's waits for each peer (itself excluded) in one step's dispatch and combine. */
    public void onWaits(int rank, long[] dispatchNs, long[] combineNs) {
        for (int p = 0; p < dispatch.length && p < dispatchNs.length; p++) {
            if (p != rank) {
                dispatch[p].record(dispatchNs[p], TimeUnit.NANOSECONDS);
                combine[p].record(combineNs[p], TimeUnit.NANOSECONDS);
            }
        }
    }

    /** Whether {@code rank} is flagged as a straggler now. */
    public void flag(int rank, boolean straggler) {
        flagged[rank] = straggler ? 1 : 0;
    }

    private static Timer timer(MeterRegistry registry, String phase, int peer) {
        return Timer.builder(A2aMeters.EXCHANGE_WAIT.meterName())
                .description(A2aMeters.EXCHANGE_WAIT.description())
                .serviceLevelObjectives(BUCKETS)
                .tag("phase", phase)
                .tag("peer", Integer.toString(peer))
                .register(registry);
    }
}
