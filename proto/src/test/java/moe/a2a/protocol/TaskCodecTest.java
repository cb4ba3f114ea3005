package moe.a2a.protocol;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import moe.a2a.dispatch.CapacityFilter;
import moe.a2a.experts.ModelConfig;
import moe.a2a.experts.RankStepResult;
import moe.a2a.experts.RoutingInput;
import moe.a2a.kernels.DType;
import moe.a2a.v1.StepTask;
import org.junit.jupiter.api.Test;

/** A step's capacity and its drops travel between the control plane and a worker unchanged. */
class TaskCodecTest {
    private static final ModelConfig MODEL = new ModelConfig(4, 8, 8, 2, 1);

    @Test
    void shouldCarryARanksCapacityOnlyWhenThereIsOne() {
        assertThat(TaskCodec.capacity(task(CapacityFilter.UNLIMITED)))
                .isEqualTo(CapacityFilter.UNLIMITED);
        assertThat(task(CapacityFilter.UNLIMITED).hasCapacity()).isFalse();
        assertThat(TaskCodec.capacity(task(0))).isZero();
        assertThat(TaskCodec.capacity(task(17))).isEqualTo(17);
    }

    @Test
    void shouldCarryTheLowLatencyBoundAndRefuseOneBelowTheTokens() {
        assertThat(TaskCodec.lowLatencyTokens(task(3))).isZero();
        StepTask bounded = task(3).toBuilder().setLlMaxTokens(16).build();
        assertThat(TaskCodec.lowLatencyTokens(bounded)).isEqualTo(16);
        StepTask under = bounded.toBuilder().setNumTokens(17).build();
        assertThatThrownBy(() -> TaskCodec.lowLatencyTokens(under))
                .isInstanceOf(InvalidRequestException.class)
                .hasMessage(
                        "step.ll_max_tokens: 16 (expected: 0, or at least the step's num_tokens"
                                + " 17)");
    }

    @Test
    void shouldNameTheFieldWhenCapacityIsNegative() {
        StepTask bad = task(3).toBuilder().setCapacity(-2).build();
        assertThatThrownBy(() -> TaskCodec.capacity(bad))
                .isInstanceOf(InvalidRequestException.class)
                .hasMessage("step.capacity: -2 (expected: >= 0)");
    }

    @Test
    void shouldReturnEachExpertsDropsInTheStepResult() {
        RankStepResult r =
                new RankStepResult(
                        ByteBuffer.allocate(0),
                        new long[] {1, 2},
                        new long[] {2, 3},
                        new long[] {3, 0, 1, 0},
                        new long[] {0, 4, 0, 2},
                        5,
                        new long[] {0, 9},
                        new long[] {0, 7},
                        1,
                        2,
                        3,
                        4,
                        new int[] {3, 0, 2, 3});
        RankStepResult back = TaskCodec.rankStepResult(TaskCodec.stepResult(6, r, 0, true));
        assertThat(back.droppedPerExpert()).containsExactly(0, 4, 0, 2);
        assertThat(back.tokensPerExpert()).containsExactly(3, 0, 1, 0);
        assertThat(back.pairsPerRank()).containsExactly(2, 3);
        assertThat(back.routedIds()).containsExactly(3, 0, 2, 3);
        assertThat(TaskCodec.rankStepResult(TaskCodec.stepResult(6, r, 0, false)).routedIds())
                .isEmpty();
    }

    private static StepTask task(int capacity) {
        return TaskCodec.stepTask(
                1,
                2,
                0,
                DType.BF16,
                ByteBuffer.allocate(0),
                0,
                new RoutingInput.ModelGate(),
                capacity,
                MODEL,
                false,
                0);
    }
}
