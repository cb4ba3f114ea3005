package moe.a2a.control.metrics;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.function.IntSupplier;

/** Membership meters of a rank group: ranks joined and group rebuilds, read when scraped. */
public final class ClusterMetrics implements MeterBinder {
    private final IntSupplier joined;
    private final IntSupplier rebuilds;

    public ClusterMetrics(IntSupplier joined, IntSupplier rebuilds) {
        this.joined = joined;
        this.rebuilds = rebuilds;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        Gauge.builder(A2aMeters.RANKS_JOINED.meterName(), joined, IntSupplier::getAsInt)
                .baseUnit(A2aMeters.RANKS_JOINED.baseUnit())
                .description(A2aMeters.RANKS_JOINED.description())
                .register(registry);
        FunctionCounter.builder(A2aMeters.COMMUNICATOR_REBUILDS.meterName(), rebuilds, IntSupplier::getAsInt)
                .baseUnit(A2aMeters.COMMUNICATOR_REBUILDS.baseUnit())
                .description(A2aMeters.COMMUNICATOR_REBUILDS.description())
                .register(registry);
    }
}
