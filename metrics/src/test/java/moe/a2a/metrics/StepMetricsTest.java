package moe.a2a.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.Arrays;
import java.util.concurrent.CompletionException;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ExchangeTimeoutException;
import moe.a2a.comm.PeerFailedException;
import moe.a2a.comm.local.LocalTransportProvider;
import moe.a2a.dispatch.Placement;
import org.junit.jupiter.api.Test;

class StepMetricsTest {

    @Test
    void shouldExposeDocumentedSeriesWhenStepsAreRecorded() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        StepMetrics metrics =
                new StepMetrics(registry, new int[] {0, 1}, 4, 2, LocalTransportProvider.LOCAL);
        new ClusterMetrics(4, () -> 3, () -> 1, () -> 2, () -> 1, () -> 2).bindTo(registry);
        new QueueMetrics(() -> 5, () -> 321).bindTo(registry);
        new WeightMemoryMetrics(
                        new WeightMemoryMetrics.Source() {
                            @Override
                            public long deviceBytesPerExpert() {
                                return 3 * 64 * 96 * 2;
                            }

                            @Override
                            public long hostBytesPerExpert() {
                                return 3 * 64 * 96 * 4;
                            }

                            @Override
                            public long localExperts() {
                                return 5;
                            }
                        })
                .bindTo(registry);
        ExchangeWaitMetrics waits = new ExchangeWaitMetrics(registry, 2);
        waits.onWaits(0, new long[] {0, 3_000_000}, new long[] {0, 40_000_000});
        waits.flag(1, true);
        // layer 1: expert 0 takes 6 of 8 assignments -> expert imbalance 6 / 2 = 3; ranks 5 and 1
        // -> 5 / 3
        long[][] sent = {{0, 700}, {300, 0}};
        long[][] received = {{0, 300}, {700, 0}};
        metrics.onStep(
                new StepStatsSnapshot(
                        0,
                        1,
                        Placement.FIRST_VERSION,
                        2,
                        4,
                        new long[] {5, 1},
                        new long[] {3, 1},
                        new long[] {6, 2},
                        new long[] {6, 1, 1, 0},
                        new long[] {3, 0, 0, 0},
                        sent,
                        received,
                        20_000,
                        300_000,
                        4_000_000,
                        250_000,
                        false),
                new long[] {1_000, 2_000});
        // a worker's view: only its own rank's traffic
        metrics.onStep(
                new StepStatsSnapshot(
                        1,
                        1,
                        Placement.FIRST_VERSION,
                        1,
                        2,
                        new long[] {1, 1},
                        new long[] {1, 0},
                        new long[] {2, 0},
                        new long[] {1, 1, 0, 0},
                        new long[] {2, 0, 0, 1},
                        new long[][] {null, {50, 0}},
                        new long[][] {null, {20, 0}},
                        1,
                        1,
                        1,
                        1,
                        true),
                new long[0]);
        metrics.onStepFailed(
                new CompletionException(
                        new ExchangeTimeoutException(3, ExchangePhase.COMBINE, 0, 1, 1_000_000)),
                96);
        metrics.onStepFailed(new PeerFailedException(1, 0, "connection reset"), 4);
        metrics.onStepFailed(new IllegalStateException("not a transport error"), 0);
        String scrape = registry.scrape();

        assertThat(scrape)
                .contains("moe_a2a_exchange_seconds_bucket{phase=\"dispatch\",transport=\"local\"")
                .contains("moe_a2a_exchange_seconds_count{phase=\"combine\",transport=\"local\"} 2")
                .contains("moe_a2a_step_stage_seconds_count{stage=\"queue\"} 2")
                .contains("moe_a2a_expert_routed_tokens_total{expert=\"0\",layer=\"1\"} 7.0")
                .contains("moe_a2a_expert_routed_tokens_total{expert=\"0\",layer=\"0\"} 0.0")
                .contains("moe_a2a_capacity_dropped_total{expert=\"0\",layer=\"1\"} 5.0")
                .contains("moe_a2a_capacity_dropped_total{expert=\"3\",layer=\"1\"} 1.0")
                .contains("moe_a2a_capacity_dropped_total{expert=\"1\",layer=\"0\"} 0.0")
                .contains("moe_a2a_rank_routed_tokens_total{layer=\"1\",rank=\"0\"} 6.0")
                .contains("moe_a2a_expert_imbalance{layer=\"1\"} 2.8")
                .contains("moe_a2a_rank_imbalance{layer=\"1\"} 1.5")
                .contains("moe_a2a_rank_routed_remote_tokens_total{layer=\"1\",rank=\"0\"} 4.0")
                .contains("moe_a2a_rank_routed_remote_tokens_total{layer=\"1\",rank=\"1\"} 1.0")
                .contains("moe_a2a_rank_pairs_assignments_total{layer=\"1\",rank=\"0\"} 8.0")
                // pairs {6, 2} then {2, 0}: 8 of 10 on rank 0 -> 8 / 5
                .contains("moe_a2a_rank_pairs_imbalance{layer=\"1\"} 1.6")
                // (300 + 250 + 2) µs of exchange over (20 + 300 + 4000 + 250 + 4) µs of step
                .contains("moe_a2a_communication_share{layer=\"1\"} 0.12035")
                .contains("moe_a2a_communication_share{layer=\"0\"} 0.0")
                .contains(
                        "moe_a2a_transport_sent_bytes_total{peer=\"1\",rank=\"0\",transport=\"local\"} 700.0")
                .contains(
                        "moe_a2a_transport_sent_bytes_total{peer=\"0\",rank=\"1\",transport=\"local\"} 350.0")
                .contains(
                        "moe_a2a_transport_received_bytes_total{peer=\"0\",rank=\"1\",transport=\"local\"} 720.0")
                .doesNotContain("moe_a2a_transport_sent_bytes_total{peer=\"0\",rank=\"0\"")
                .contains("moe_a2a_failed_steps_total 3.0")
                .contains("moe_a2a_steps_total{mode=\"normal\"} 1.0")
                .contains("moe_a2a_steps_total{mode=\"low-latency\"} 1.0")
                .contains("moe_a2a_failed_step_tokens_total 100.0")
                .contains(
                        "moe_a2a_transport_errors_total{kind=\"timeout\",transport=\"local\"} 1.0")
                .contains(
                        "moe_a2a_transport_errors_total{kind=\"peer_failed\",transport=\"local\"} 1.0")
                .contains("moe_a2a_transport_errors_total{kind=\"other\",transport=\"local\"} 0.0")
                .contains("moe_a2a_placement_version{layer=\"1\"} 1.0")
                .contains("moe_a2a_cluster_size_ranks 4.0")
                .contains("moe_a2a_cluster_joined_ranks 3.0")
                .contains("moe_a2a_cluster_healthy_ranks 1.0")
                .contains("moe_a2a_cluster_degraded_ranks 1.0")
                .contains("moe_a2a_cluster_partitioned_ranks 2.0")
                .contains(
                        "moe_a2a_exchange_wait_seconds_bucket{peer=\"1\",phase=\"dispatch\",le=\"0.005\"} 1")
                .contains(
                        "moe_a2a_exchange_wait_seconds_bucket{peer=\"1\",phase=\"combine\",le=\"0.02\"} 0")
                .contains(
                        "moe_a2a_exchange_wait_seconds_bucket{peer=\"1\",phase=\"combine\",le=\"0.1\"} 1")
                .contains("moe_a2a_exchange_wait_seconds_count{peer=\"0\",phase=\"dispatch\"} 0")
                .contains("moe_a2a_rank_straggler{rank=\"1\"} 1.0")
                .contains("moe_a2a_rank_straggler{rank=\"0\"} 0.0")
                .contains("moe_a2a_queue_requests 5.0")
                .contains("moe_a2a_queue_tokens 321.0")
                .contains("moe_a2a_rank_expert_weight_bytes{where=\"device\"} 36864.0")
                .contains("moe_a2a_rank_expert_weight_bytes{where=\"host\"} 73728.0")
                .contains("moe_a2a_rank_weight_bytes{where=\"device\"} 184320.0")
                .contains("moe_a2a_rank_weight_bytes{where=\"host\"} 368640.0")
                .contains("moe_a2a_communicator_rebuilds_total 2.0");
        // every documented meter is registered, under its documented name
        for (A2aMeters meter : A2aMeters.values()) {
            assertThat(registry.getMeters())
                    .as(meter.name())
                    .anyMatch(m -> m.getId().getName().equals(meter.meterName()));
        }
        // histogram buckets reach down to ~10 µs so quantiles work on fast exchanges
        assertThat(
                        Arrays.stream(scrape.split("\n"))
                                .filter(
                                        l ->
                                                l.startsWith(
                                                        "moe_a2a_exchange_seconds_bucket{phase=\"dispatch\""))
                                .anyMatch(
                                        l ->
                                                l.contains("le=\"1.0E-5\"")
                                                        || l.contains("le=\"1.1E-5\"")))
                .isTrue();
    }

    @Test
    void shouldKeepReadingMembershipWhenOnlyTheRegistryHoldsTheSuppliers() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        int[] state = {4, 3, 1};
        new ClusterMetrics(4, () -> state[0], () -> state[1], () -> state[2], () -> 0, () -> 0)
                .bindTo(registry);
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        assertThat(registry.scrape())
                .contains("moe_a2a_cluster_joined_ranks 4.0")
                .contains("moe_a2a_cluster_healthy_ranks 3.0")
                .contains("moe_a2a_communicator_rebuilds_total 1.0");
    }
}
