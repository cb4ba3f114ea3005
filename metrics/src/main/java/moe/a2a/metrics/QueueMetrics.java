package moe.a2a.metrics;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;

/**
 * The admission queue's depth, in requests and in tokens, read when scraped. The gauges hold this
 * object strongly (Micrometer holds a meter's state weakly).
 */
public final class QueueMetrics implements MeterBinder {
    private final IntSupplier requests;
    private final LongSupplier tokens;

    public QueueMetrics(IntSupplier requests, LongSupplier tokens) {
        this.requests = requests;
        this.tokens = tokens;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        Gauge.builder(A2aMeters.QUEUE_REQUESTS.meterName(), this, q -> q.requests.getAsInt())
                .strongReference(true)
                .baseUnit(A2aMeters.QUEUE_REQUESTS.baseUnit())
                .description(A2aMeters.QUEUE_REQUESTS.description())
                .register(registry);
        Gauge.builder(A2aMeters.QUEUE_TOKENS.meterName(), this, q -> q.tokens.getAsLong())
                .strongReference(true)
                .baseUnit(A2aMeters.QUEUE_TOKENS.baseUnit())
                .description(A2aMeters.QUEUE_TOKENS.description())
                .register(registry);
    }
}
