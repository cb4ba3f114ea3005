package moe.a2a.metrics;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.function.IntSupplier;
import java.util.function.ToDoubleFunction;

/**
 * Membership meters of a rank group: its size, ranks joined, healthy, served without and set aside
 * for cut links, group rebuilds; read when scraped. Every meter reads through this object, which
 * the gauges hold strongly: Micrometer holds a meter's state weakly, and a method reference passed
 * in has no other owner (it would be collected and the meter read NaN).
 */
public final class ClusterMetrics implements MeterBinder {
    private final int worldSize;
    private final IntSupplier joined;
    private final IntSupplier healthy;
    private final IntSupplier rebuilds;
    private final IntSupplier degraded;
    private final IntSupplier partitioned;

    public ClusterMetrics(
            int worldSize,
            IntSupplier joined,
            IntSupplier healthy,
            IntSupplier rebuilds,
            IntSupplier degraded,
            IntSupplier partitioned) {
        this.worldSize = worldSize;
        this.joined = joined;
        this.healthy = healthy;
        this.rebuilds = rebuilds;
        this.degraded = degraded;
        this.partitioned = partitioned;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        gauge(registry, A2aMeters.RANKS_EXPECTED, m -> m.worldSize);
        gauge(registry, A2aMeters.RANKS_JOINED, m -> m.joined.getAsInt());
        gauge(registry, A2aMeters.RANKS_HEALTHY, m -> m.healthy.getAsInt());
        gauge(registry, A2aMeters.RANKS_DEGRADED, m -> m.degraded.getAsInt());
        gauge(registry, A2aMeters.RANKS_PARTITIONED, m -> m.partitioned.getAsInt());
        FunctionCounter.builder(
                        A2aMeters.COMMUNICATOR_REBUILDS.meterName(),
                        this,
                        m -> m.rebuilds.getAsInt())
                .baseUnit(A2aMeters.COMMUNICATOR_REBUILDS.baseUnit())
                .description(A2aMeters.COMMUNICATOR_REBUILDS.description())
                .register(registry);
    }

    private void gauge(
            MeterRegistry registry, A2aMeters meter, ToDoubleFunction<ClusterMetrics> value) {
        Gauge.builder(meter.meterName(), this, value)
                .strongReference(true)
                .baseUnit(meter.baseUnit())
                .description(meter.description())
                .register(registry);
    }
}
