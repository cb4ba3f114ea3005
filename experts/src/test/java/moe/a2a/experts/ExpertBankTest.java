package moe.a2a.experts;

import static org.assertj.core.api.Assertions.assertThat;

import moe.a2a.dispatch.Placement;
import org.junit.jupiter.api.Test;

class ExpertBankTest {
    private static final int H = 16;
    private static final int I = 24;
    private static final long EXPERT_BYTES =
            3L * H * I * 2; // held in bf16, as the seeded weights are

    private final SeededWeights weights = new SeededWeights(5, 6, H, I, 2);

    @Test
    void shouldLoadOnlyTheExpertsARankLacksWhenStagingAPlacement() {
        Placement first = Placement.contiguous(6, 3);
        Placement next = Placement.of(2, 6, new int[][] {{5, 0}, {1, 2}, {3, 4}});
        ExpertBank bank = new ExpertBank(weights, first, 0);
        HeldExpert expert0 = bank.layer(0).weights()[0];

        LayerSlots staged = bank.stage(0, next);

        assertThat(staged.layer()).isZero();
        assertThat(staged.placement()).isSameAs(next);
        assertThat(staged.loadedBytes()).as("expert 5 only").isEqualTo(EXPERT_BYTES);
        assertThat(staged.weights()[1]).as("expert 0 kept, now in slot 1").isSameAs(expert0);
        assertThat(((Bf16Expert) staged.weights()[0]).widened().w2())
                .as("expert 5's weights, as the source has them")
                .isEqualTo(weights.expert(0, 5).w2());
        assertThat(bank.layer(0).placement())
                .as("steps keep the current placement until install")
                .isSameAs(first);

        bank.install(staged);

        assertThat(bank.layer(0)).isSameAs(staged);
        assertThat(bank.layer(1).placement()).as("other layers untouched").isSameAs(first);
    }

    @Test
    void shouldLoadAReplicatedExpertOnceWhenARankHostsItTwice() {
        Placement first = Placement.of(1, 6, new int[][] {{0, 1, 2}, {3, 4, 5}, {0, 1, 2}});
        Placement next = Placement.of(2, 6, new int[][] {{4, 4, 0}, {1, 2, 5}, {3, 0, 1}});
        ExpertBank bank = new ExpertBank(weights, first, 0);

        LayerSlots staged = bank.stage(1, next);

        assertThat(staged.loadedBytes()).isEqualTo(EXPERT_BYTES);
        assertThat(staged.weights()[0]).isSameAs(staged.weights()[1]);
    }
}
