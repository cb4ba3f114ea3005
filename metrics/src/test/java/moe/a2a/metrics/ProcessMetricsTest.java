package moe.a2a.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;

/** The process-wide meter rules: bounded moe-a2a labels, promtool-clean third-party names. */
class ProcessMetricsTest {
    @Test
    void shouldCapDistinctLabelValuesWhenTooManyAreRegistered() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        ProcessMetrics.bindTo(registry);
        for (int e = 0; e < ProcessMetrics.MAX_TAG_VALUES + 100; e++) {
            Counter.builder(A2aMeters.EXPERT_ROUTED.meterName())
                    .tag("layer", "0")
                    .tag("expert", Integer.toString(e))
                    .register(registry)
                    .increment();
        }
        assertThat(registry.find(A2aMeters.EXPERT_ROUTED.meterName()).counters())
                .hasSize(ProcessMetrics.MAX_TAG_VALUES);
        assertThat(registry.scrape())
                .doesNotContain("process_cpu_time_ns")
                .doesNotContain("system_cpu_count");
    }
}
