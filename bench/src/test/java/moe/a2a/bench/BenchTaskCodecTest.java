package moe.a2a.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import moe.a2a.comm.CollectiveAlgo;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;
import moe.a2a.v1.BenchTask;
import org.junit.jupiter.api.Test;

/** A collective case and its times travel between the control plane and a worker unchanged. */
class BenchTaskCodecTest {
    @Test
    void shouldCarryACollectiveCaseAndItsTimesBothWays() {
        CollectiveCase c =
                new CollectiveCase(
                        Collective.BROADCAST,
                        3,
                        4099,
                        DType.FP16,
                        ReduceOp.MAX,
                        CollectiveAlgo.TREE,
                        2);
        BenchTask task =
                BenchTaskCodec.task(BenchTaskCodec.collectiveBenchTask(c, 1, 5).toByteArray());
        assertThat(task.getWarmup()).isEqualTo(1);
        assertThat(task.getIters()).isEqualTo(5);
        assertThat(task.getWorkload()).isEmpty();
        assertThat(BenchTaskCodec.collectiveCase(task.getCollective(), 3)).isEqualTo(c);

        CollectiveTimes times = new CollectiveTimes(new long[] {5, 3, 9}, 4);
        CollectiveTimes back =
                BenchTaskCodec.collectiveTimes(
                        BenchTaskCodec.result(
                                BenchTaskCodec.collectiveBenchResult(times).toByteArray()));
        assertThat(back.ns()).containsExactly(5, 3, 9);
        assertThat(back.wrong()).isEqualTo(4);
    }

    @Test
    void shouldNameTheFieldOfAnUnknownCollectiveChoice() {
        BenchTask task =
                BenchTaskCodec.collectiveBenchTask(
                        new CollectiveCase(
                                Collective.ALLREDUCE,
                                2,
                                64,
                                DType.FP32,
                                ReduceOp.SUM,
                                CollectiveAlgo.AUTO,
                                0),
                        0,
                        1);
        assertThatThrownBy(
                        () ->
                                BenchTaskCodec.collectiveCase(
                                        task.getCollective().toBuilder().setOp("prod").build(), 2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("op: prod (expected: one of sum, max, min)");
    }
}
