package moe.a2a.control.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import moe.a2a.protocol.InvalidRequestException;
import org.junit.jupiter.api.Test;

/**
 * Each step's mode and region size: normal never low latency; auto low latency when the largest
 * share fits, in regions of the next power of two up to the bound; low-latency refuses what does
 * not fit; a group across hosts runs normal steps.
 */
class StepModesTest {
    final StepModes auto = new StepModes(StepModes.Choice.AUTO, 100);
    final StepModes low = new StepModes(StepModes.Choice.LOW_LATENCY, 100);

    @Test
    void shouldSizeRegionsForTheLargestShareAsAPowerOfTwoUpToTheBound() {
        assertThat(auto.lowLatencyTokens(new int[] {3, 5, 0, 1}, false)).isEqualTo(8);
        assertThat(auto.lowLatencyTokens(new int[] {8, 8}, false)).isEqualTo(8);
        assertThat(auto.lowLatencyTokens(new int[] {0, 0}, false)).isEqualTo(1);
        assertThat(auto.lowLatencyTokens(new int[] {1}, false)).isEqualTo(1);
        assertThat(auto.lowLatencyTokens(new int[] {70, 2}, false)).isEqualTo(100);
        assertThat(low.lowLatencyTokens(new int[] {33}, false)).isEqualTo(64);
        assertThat(StepModes.NORMAL.lowLatencyTokens(new int[] {1, 1}, false)).isZero();
    }

    @Test
    void shouldRunNormalStepsWhereLowLatencyCannot() {
        assertThat(auto.lowLatencyTokens(new int[] {101, 0}, false)).isZero();
        assertThat(auto.lowLatencyTokens(new int[] {4, 4}, true)).isZero();
        assertThatThrownBy(() -> low.lowLatencyTokens(new int[] {101, 0}, false))
                .isInstanceOf(InvalidRequestException.class)
                .hasMessageContaining("puts 101 on a rank (expected: at most --ll-max-tokens 100");
        assertThatThrownBy(() -> low.lowLatencyTokens(new int[] {4, 4}, true))
                .hasMessageStartingWith("--mode low-latency: this group spans hosts");
        assertThatThrownBy(() -> new StepModes(StepModes.Choice.AUTO, 0))
                .hasMessage("--ll-max-tokens: 0 (expected: >= 1 token a rank)");
        assertThatThrownBy(() -> StepModes.Choice.parse("--mode", "fast"))
                .hasMessage("--mode: fast (expected: one of auto, normal, low-latency)");
    }
}
