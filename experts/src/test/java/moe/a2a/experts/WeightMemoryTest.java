package moe.a2a.experts;

import static org.assertj.core.api.Assertions.assertThat;

import moe.a2a.dispatch.Placement;
import moe.a2a.kernels.DType;
import org.junit.jupiter.api.Test;

class WeightMemoryTest {
    private static final int H = 16;
    private static final int I = 24;

    @Test
    void aCpuRankShouldHoldEachDistinctExpertOnceOnTheHostAsPlacedNow() {
        SeededWeights weights = new SeededWeights(5, 6, H, I, 2);
        ModelConfig model = new ModelConfig(6, H, I, 2, 2);
        Placement first = Placement.of(1, 6, new int[][] {{0, 1, 2}, {3, 4, 5}, {0, 1, 2}});
        CpuRankRuntime runtime = new CpuRankRuntime(model, weights, first, 0);

        assertThat(runtime.weightMemory())
                .as("bf16, as the seeded weights are held")
                .isEqualTo(new WeightMemory(0, 3L * H * I * 2, 3 + 3));
        assertThat(
                        new CpuRankRuntime(
                                        model, ArrayWeights.copyOf(weights, DType.FP32), first, 0)
                                .weightMemory()
                                .hostBytesPerExpert())
                .as("fp32 where the source holds fp32")
                .isEqualTo(3L * H * I * Float.BYTES);

        // layer 1 moves to two slots of expert 4 and one of expert 0 on rank 0
        Placement next = Placement.of(2, 6, new int[][] {{4, 4, 0}, {1, 2, 5}, {3, 0, 1}});
        runtime.install(runtime.stage(1, next));

        assertThat(runtime.weightMemory().localExperts())
                .as("layer 0's three, layer 1's two distinct")
                .isEqualTo(3 + 2);
        assertThat(runtime.weightMemory().hostBytesPerExpert())
                .as("what ExpertBank loads for one expert (expert 4 into layer 0)")
                .isEqualTo(runtime.stage(0, next).loadedBytes());
    }
}
