package moe.a2a.control.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.Arrays;
import moe.a2a.control.cluster.StepStatsSnapshot;
import org.junit.jupiter.api.Test;

class StepMetricsTest {

    @Test
    void shouldExposeDocumentedSeriesWhenStepsAreRecorded() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        StepMetrics metrics = new StepMetrics(registry, 2, 4, 2, "local");
        new ClusterMetrics(() -> 3, () -> 2).bindTo(registry);
        // layer 1: expert 0 takes 6 of 8 assignments -> expert imbalance 6 / 2 = 3; ranks 5 and 1 -> 5 / 3
        metrics.onStep(new StepStatsSnapshot(0, 1, 2, 4, new long[] {5, 1}, new long[] {6, 1, 1, 0},
                20_000, 300_000, 4_000_000, 250_000), new long[] {1_000, 2_000});
        metrics.onStepFailed(new RuntimeException("test"));
        String scrape = registry.scrape();

        assertThat(scrape)
                .contains("moe_a2a_exchange_seconds_bucket{phase=\"dispatch\",transport=\"local\"")
                .contains("moe_a2a_exchange_seconds_count{phase=\"combine\",transport=\"local\"} 1")
                .contains("moe_a2a_step_stage_seconds_count{stage=\"queue\"} 2")
                .contains("moe_a2a_expert_routed_tokens_total{expert=\"0\",layer=\"1\"} 6.0")
                .contains("moe_a2a_expert_routed_tokens_total{expert=\"0\",layer=\"0\"} 0.0")
                .contains("moe_a2a_rank_routed_tokens_total{layer=\"1\",rank=\"0\"} 5.0")
                .contains("moe_a2a_expert_imbalance{layer=\"1\"} 3.0")
                .contains("moe_a2a_rank_imbalance{layer=\"1\"} 1.6666666666666667")
                .contains("moe_a2a_step_failures_steps_total 1.0")
                .contains("moe_a2a_cluster_ranks_joined_ranks 3.0")
                .contains("moe_a2a_communicator_rebuilds_total 2.0");
        // every documented meter is registered, under its documented name
        for (A2aMeters meter : A2aMeters.values()) {
            assertThat(registry.getMeters()).as(meter.name())
                    .anyMatch(m -> m.getId().getName().equals(meter.meterName()));
        }
        // histogram buckets reach down to ~10 µs so quantiles work on fast exchanges
        assertThat(Arrays.stream(scrape.split("\n"))
                .filter(l -> l.startsWith("moe_a2a_exchange_seconds_bucket{phase=\"dispatch\""))
                .anyMatch(l -> l.contains("le=\"1.0E-5\"") || l.contains("le=\"1.1E-5\"")))
                .isTrue();
    }
}
