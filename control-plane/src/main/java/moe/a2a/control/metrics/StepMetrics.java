package moe.a2a.control.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import moe.a2a.control.cluster.StepListener;
import moe.a2a.control.cluster.StepStatsSnapshot;
import moe.a2a.control.grpc.Imbalance;

/**
 * Records every step into Micrometer. All meters are registered up front and kept in arrays
 * indexed by layer, expert and rank, so recording a step does no lookups. Called on the
 * scheduler thread; gauges are read by the scrape thread.
 */
public final class StepMetrics implements StepListener {
    private final Timer dispatchExchange;
    private final Timer combineExchange;
    private final Timer queueStage;
    private final Timer routeStage;
    private final Timer dispatchStage;
    private final Timer expertStage;
    private final Timer combineStage;
    private final Counter[][] expertRouted;
    private final Counter[][] rankRouted;
    private final AtomicLong[] expertImbalanceBits;
    private final AtomicLong[] rankImbalanceBits;
    private final Counter failures;

    public StepMetrics(MeterRegistry registry, int layers, int experts, int worldSize, String transport) {
        dispatchExchange = exchange(registry, "dispatch", transport);
        combineExchange = exchange(registry, "combine", transport);
        queueStage = stage(registry, "queue");
        routeStage = stage(registry, "route");
        dispatchStage = stage(registry, "dispatch");
        expertStage = stage(registry, "expert");
        combineStage = stage(registry, "combine");
        expertRouted = new Counter[layers][experts];
        rankRouted = new Counter[layers][worldSize];
        expertImbalanceBits = new AtomicLong[layers];
        rankImbalanceBits = new AtomicLong[layers];
        for (int l = 0; l < layers; l++) {
            String layer = Integer.toString(l);
            for (int e = 0; e < experts; e++) {
                expertRouted[l][e] = counter(registry, A2aMeters.EXPERT_ROUTED).tag("layer", layer)
                        .tag("expert", Integer.toString(e)).register(registry);
            }
            for (int r = 0; r < worldSize; r++) {
                rankRouted[l][r] = counter(registry, A2aMeters.RANK_ROUTED).tag("layer", layer)
                        .tag("rank", Integer.toString(r)).register(registry);
            }
            expertImbalanceBits[l] = gauge(registry, A2aMeters.EXPERT_IMBALANCE, layer);
            rankImbalanceBits[l] = gauge(registry, A2aMeters.RANK_IMBALANCE, layer);
        }
        failures = counter(registry, A2aMeters.STEP_FAILURES).register(registry);
    }

    @Override
    public void onStep(StepStatsSnapshot stats, long[] queueNs) {
        dispatchExchange.record(stats.dispatchNs(), TimeUnit.NANOSECONDS);
        combineExchange.record(stats.combineNs(), TimeUnit.NANOSECONDS);
        for (long q : queueNs) {
            queueStage.record(q, TimeUnit.NANOSECONDS);
        }
        routeStage.record(stats.routeNs(), TimeUnit.NANOSECONDS);
        dispatchStage.record(stats.dispatchNs(), TimeUnit.NANOSECONDS);
        expertStage.record(stats.expertNs(), TimeUnit.NANOSECONDS);
        combineStage.record(stats.combineNs(), TimeUnit.NANOSECONDS);
        int l = stats.layer();
        for (int e = 0; e < stats.tokensPerExpert().length; e++) {
            expertRouted[l][e].increment(stats.tokensPerExpert()[e]);
        }
        for (int r = 0; r < stats.tokensPerRank().length; r++) {
            rankRouted[l][r].increment(stats.tokensPerRank()[r]);
        }
        expertImbalanceBits[l].set(Double.doubleToLongBits(Imbalance.maxOverMean(stats.tokensPerExpert())));
        rankImbalanceBits[l].set(Double.doubleToLongBits(Imbalance.maxOverMean(stats.tokensPerRank())));
    }

    @Override
    public void onStepFailed(Throwable cause) {
        failures.increment();
    }

    private static Timer exchange(MeterRegistry registry, String phase, String transport) {
        return timer(A2aMeters.EXCHANGE).tag("phase", phase).tag("transport", transport).register(registry);
    }

    private static Timer stage(MeterRegistry registry, String stage) {
        return timer(A2aMeters.STEP_STAGE).tag("stage", stage).register(registry);
    }

    private static Timer.Builder timer(A2aMeters meter) {
        return Timer.builder(meter.meterName())
                .description(meter.description())
                .publishPercentileHistogram()
                .minimumExpectedValue(Duration.ofNanos(10_000))
                .maximumExpectedValue(Duration.ofSeconds(30));
    }

    private static Counter.Builder counter(MeterRegistry registry, A2aMeters meter) {
        return Counter.builder(meter.meterName()).baseUnit(meter.baseUnit()).description(meter.description());
    }

    private static AtomicLong gauge(MeterRegistry registry, A2aMeters meter, String layer) {
        AtomicLong bits = new AtomicLong(Double.doubleToLongBits(0));
        Gauge.builder(meter.meterName(), bits, b -> Double.longBitsToDouble(b.get()))
                .description(meter.description())
                .tag("layer", layer)
                .register(registry);
        return bits;
    }
}
