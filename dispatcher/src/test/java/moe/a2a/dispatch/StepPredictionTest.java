package moe.a2a.dispatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class StepPredictionTest {
    /** Two nodes of two ranks: 100 GB/s inside a node, 10 between, 1 TFLOP/s. */
    private static final HardwareProfile TWO_BY_TWO =
            new HardwareProfile("test", 2, 100, 10, 1, "by hand");

    @Test
    void shouldTakeTheSlowestRanksSlowestLinkWhenRowsCrossNodes() {
        long[][] rows = {{5, 10, 20, 0}, {0, 3, 0, 0}, {0, 0, 0, 40}, {1, 0, 0, 0}};
        long[][] pairs = {{6, 10, 10, 0}, {0, 10, 0, 0}, {0, 0, 20, 50}, {0, 0, 0, 0}};
        RoutingCost cost = RoutingCost.of(rows, pairs);

        StepPrediction p = StepPrediction.of(cost, TWO_BY_TWO, 10, 20, 1000, 500);

        // rank 0 sends 20 rows to the other node and rank 2 receives them: 20 kB at 10 GB/s
        assertThat(p.dispatchUs()).isCloseTo(2.0, within(1e-9));
        // combine returns them at 500 B a row
        assertThat(p.combineUs()).isCloseTo(1.0, within(1e-9));
        // rank 3 computes 50 pairs of 6 x 10 x 20 FLOPs at 1e12 FLOP/s
        assertThat(p.expertUs()).isCloseTo(0.06, within(1e-9));
        assertThat(p.totalUs()).isCloseTo(3.06, within(1e-9));
    }

    @Test
    void shouldRefuseASingleNodeProfileWhenTheRanksSpanMore() {
        RoutingCost cost = RoutingCost.of(new long[16][16], new long[16][16]);
        assertThatThrownBy(
                        () ->
                                StepPrediction.of(
                                        cost, HardwareProfile.H200_NVLINK_8, 7168, 2048, 2, 2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("h200-nvlink-8 has one node of 8 ranks");
        assertThatThrownBy(() -> HardwareProfile.named("tpu"))
                .hasMessageContaining(
                        "hardware: tpu (expected: one of [h200-nvlink-8, h200-ib400]");
        assertThatThrownBy(() -> new HardwareProfile("x", 8, 0, 0, 1, ""))
                .hasMessage("intra_node_gbps: 0.0 (expected: > 0)");
    }
}
