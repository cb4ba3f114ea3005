package moe.a2a.metrics;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.function.ToLongFunction;

/**
 * Where a rank holds its experts' weights, read when scraped: bytes per local expert and in all, on
 * the device and on the host ({@code where}). A GPU rank that holds a host copy beside its device
 * one shows both. The gauges hold this object strongly (Micrometer holds a meter's state weakly).
 */
public final class WeightMemoryMetrics implements MeterBinder {
    /** Bytes where the weights live; 0 before the rank has loaded its experts. */
    public interface Source {
        long deviceBytesPerExpert();

        long hostBytesPerExpert();

        /** Local experts, summed over the layers. */
        long localExperts();
    }

    private final Source source;

    public WeightMemoryMetrics(Source source) {
        this.source = source;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        gauge(registry, A2aMeters.EXPERT_WEIGHT_BYTES, "device", Source::deviceBytesPerExpert);
        gauge(registry, A2aMeters.EXPERT_WEIGHT_BYTES, "host", Source::hostBytesPerExpert);
        gauge(
                registry,
                A2aMeters.WEIGHT_BYTES,
                "device",
                s -> s.deviceBytesPerExpert() * s.localExperts());
        gauge(
                registry,
                A2aMeters.WEIGHT_BYTES,
                "host",
                s -> s.hostBytesPerExpert() * s.localExperts());
    }

    private void gauge(
            MeterRegistry registry, A2aMeters meter, String where, ToLongFunction<Source> bytes) {
        Gauge.builder(meter.meterName(), this, m -> bytes.applyAsLong(m.source))
                .strongReference(true)
                .tag("where", where)
                .baseUnit(meter.baseUnit())
                .description(meter.description())
                .register(registry);
    }
}
